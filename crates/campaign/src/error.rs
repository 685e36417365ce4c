//! The campaign's error type.

/// Errors of campaigns, their tests and their targets.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The campaign file is invalid.
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
    /// The results store failed.
    #[error(transparent)]
    Store(#[from] pgsurge_store::StoreError),
    /// A throwaway server failed.
    #[error("{0}")]
    Server(#[from] pgsurge_server::ServerError),
    /// A query or connection of the observers' SQL session failed.
    #[error(transparent)]
    Observe(#[from] pgsurge_observe::ObserveError),
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

/// Result alias of the campaign crate.
pub type Result<T, E = CampaignError> = std::result::Result<T, E>;
