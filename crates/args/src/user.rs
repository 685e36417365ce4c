//! The effective OS user name, the last fallback for the database name
//! (pgbench's `get_user_name_or_exit`: `getpwuid(geteuid())`).

/// Returns the user name, or pgbench's error text when it cannot be looked up.
pub fn effective_user_name() -> Result<String, String> {
    pgsurge_wire::OsUser::effective()
        .map(|u| u.name)
        .ok_or_else(|| {
            format!(
                "could not look up effective user ID {}: user does not exist",
                pgsurge_wire::os_user::effective_uid()
            )
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_a_name_for_the_current_user() {
        let name = super::effective_user_name().expect("test user exists in passwd");
        assert!(!name.is_empty());
    }
}
