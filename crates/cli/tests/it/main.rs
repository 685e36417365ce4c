//! The integration tests of `pgsurge-cli`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod abort_diff;
mod bench_diff;
mod bench_extensions;
mod bench_interrupt;
mod bench_outputs;
mod bench_run;
mod bench_store;
mod bisect;
mod build_cache;
mod campaign_distributed;
mod campaign_faults;
mod campaign_resume;
mod campaign_workload;
mod cli_outputs;
mod debug_trace;
mod dist_group;
mod dist_local;
mod dist_ssh_netns;
mod fresh_cluster;
mod hdr_log_unit;
mod init_jobs;
mod kube_fake_cluster;
mod kube_job;
mod patch_ab;
mod pgbench_tools_compare;
mod pgbench_tools_runset;
mod pinning;
mod quickstart;
mod quickstart_fetch;
mod script_bytes_diff;
mod script_diff;
mod store_integrity;
mod workload_common;
mod workload_packs;
mod workload_tpcc;
