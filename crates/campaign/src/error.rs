//! The campaign's error types: [`SpecError`] for a campaign file that is not valid,
//! [`CampaignError`] for everything that can go wrong running one.

/// Errors in a campaign file.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("cannot read campaign file {path}: {source}")]
    Read {
        /// The campaign file, as given on the command line.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// TOML syntax or an unknown/mistyped key.
    #[error("campaign file {path}: {message}")]
    Toml {
        /// The campaign file, as given on the command line.
        path: String,
        /// The TOML parser's message (with line and column).
        message: String,
    },
    /// A value is not valid.
    #[error("campaign file {path}: {key}: {message}")]
    Invalid {
        /// The campaign file, as given on the command line.
        path: String,
        /// The key, e.g. `matrix.clients`.
        key: String,
        /// What is wrong and what would be valid.
        message: String,
    },
}

/// Errors of campaigns.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The campaign file is invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
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
