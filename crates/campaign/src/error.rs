//! The lab's error type.

/// Errors of campaigns, samplers, `pgsurge results` and quickstart.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The campaign file is invalid.
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    /// The results store failed.
    #[error(transparent)]
    Store(#[from] pgsurge_store::StoreError),
    /// A throwaway server failed.
    #[error("{0}")]
    Server(#[from] pgsurge_server::ServerError),
    /// A PostgreSQL query or connection failed.
    #[error("{context}: {message}")]
    Pg {
        /// What was being done.
        context: String,
        /// The server's or libpq-style message.
        message: String,
    },
    /// Anything else, with a message a person can act on.
    #[error("{0}")]
    Other(String),
}

/// Result alias for the lab.
pub type Result<T, E = LabError> = std::result::Result<T, E>;
