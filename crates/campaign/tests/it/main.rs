//! The integration tests of `pgsurge-campaign`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod campaign_e2e;
mod capacity;
mod events;
mod existing_server;
mod live_view;
mod matrix_hooks;
mod outage;
mod pg_versions;
mod remote_server;
mod series;
mod set_inputs;
mod throwaway_data_dir;
