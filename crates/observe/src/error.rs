//! The error type of watching a server.

/// A PostgreSQL connection or query of the observers failed.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// A PostgreSQL query or connection failed.
    #[error("{context}: {message}")]
    Pg {
        /// What was being done.
        context: String,
        /// The server's or libpq-style message (passwords masked).
        message: String,
        /// Whether the server was out of reach or the connection lost.
        class: pgsurge_wire::ErrorClass,
    },
}

impl ObserveError {
    /// `Connection` when the server could not be reached or the connection was lost.
    pub fn class(&self) -> pgsurge_wire::ErrorClass {
        match self {
            ObserveError::Pg { class, .. } => *class,
        }
    }
}

/// Result alias of the observers.
pub type Result<T, E = ObserveError> = std::result::Result<T, E>;
