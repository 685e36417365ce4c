//! Run statistics and their renderers: the pgbench text report, progress lines, transaction logs, the JSON document, HDR interval logs.
