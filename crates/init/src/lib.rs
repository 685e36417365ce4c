//! pgbench -i: schema creation and data generation identical to pgbench.
