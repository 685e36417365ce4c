//! State of detached servers (placeholder).
