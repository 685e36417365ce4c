//! What the benchmark harnesses share (`pgsurge-floor`, and `pgsurge-sink` beside it).

pub mod epoll;
