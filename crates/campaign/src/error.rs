//! The campaign's error type.

use pgsurge_wire::ErrorClass;

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
    /// The benchmark run failed or a client aborted.
    #[error("{message}")]
    Run {
        /// The engine's error and the clients' messages.
        message: String,
        /// `Connection` when the server went away (a lost or refused connection).
        class: ErrorClass,
    },
    /// Anything else, with a message a person can act on.
    #[error("{0}")]
    Other(String),
}

impl CampaignError {
    /// `Connection` when the error says the server was out of reach or the connection
    /// to it was lost, as `pgsurge_wire` classed it: an outage, not the test's failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            CampaignError::Observe(e) => e.class(),
            CampaignError::Run { class, .. } => *class,
            _ => ErrorClass::Other,
        }
    }
}

/// Result alias of the campaign crate.
pub type Result<T, E = CampaignError> = std::result::Result<T, E>;
