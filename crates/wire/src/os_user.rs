//! The operating system's accounts: who runs this process (libpq's default user name and
//! the home of `~/.pgpass`, pgbench's last default for the database name) and accounts
//! looked up by name (the unprivileged user a throwaway server runs as). The lookups are
//! the `uzers` crate's (`getpwuid_r`/`getpwnam_r`); this module is their one home.

use std::path::PathBuf;

use uzers::os::unix::UserExt;

/// An account of the user database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsUser {
    /// The login name.
    pub name: String,
    /// The user ID.
    pub uid: u32,
    /// The primary group's ID.
    pub gid: u32,
    /// The home directory.
    pub home: PathBuf,
}

impl OsUser {
    fn of(u: &uzers::User) -> OsUser {
        OsUser {
            name: u.name().to_string_lossy().into_owned(),
            uid: u.uid(),
            gid: u.primary_group_id(),
            home: u.home_dir().to_path_buf(),
        }
    }

    /// The account the process runs as (its effective user ID), or `None` when the
    /// user database has no entry for it.
    pub fn effective() -> Option<OsUser> {
        uzers::get_user_by_uid(effective_uid()).map(|u| OsUser::of(&u))
    }

    /// The account named `name`, or `None` when there is none.
    pub fn by_name(name: &str) -> Option<OsUser> {
        uzers::get_user_by_name(name).map(|u| OsUser::of(&u))
    }

    /// True for the superuser (uid 0).
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }
}

/// The process's effective user ID.
pub fn effective_uid() -> u32 {
    uzers::get_effective_uid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_user_is_found_by_its_name_too() {
        let me = OsUser::effective().expect("the test's user is in the user database");
        assert_eq!(me.uid, effective_uid());
        assert!(!me.name.is_empty());
        assert_eq!(OsUser::by_name(&me.name).as_ref(), Some(&me));
    }

    #[test]
    fn an_unknown_name_is_none() {
        assert_eq!(OsUser::by_name("no-such-user-pgsurge-xyz"), None);
    }
}
