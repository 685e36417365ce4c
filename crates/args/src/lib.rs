//! pgbench's command line: getopt_long parsing, options, post-parse checks, help.
