//! The effective OS user name, the last fallback for the database name
//! (pgbench's `get_user_name_or_exit`: `getpwuid(geteuid())`).

/// Returns the user name, or pgbench's error text when it cannot be looked up.
pub fn effective_user_name() -> Result<String, String> {
    let uid = rustix::process::geteuid().as_raw();
    let mut buf = vec![0 as libc::c_char; 4096];
    loop {
        // SAFETY: `pwd` and `buf` outlive the call; getpwuid_r writes only into them
        // and sets `result` to null or to `&pwd`.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 {
            let e = std::io::Error::from_raw_os_error(rc);
            return Err(format!(
                "could not look up effective user ID {uid}: {}",
                crate::diag::strerror(&e)
            ));
        }
        if result.is_null() {
            return Err(format!(
                "could not look up effective user ID {uid}: user does not exist"
            ));
        }
        // SAFETY: on success pw_name points to a NUL-terminated string inside `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        return Ok(name.to_string_lossy().into_owned());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_a_name_for_the_current_user() {
        let name = super::effective_user_name().expect("test user exists in passwd");
        assert!(!name.is_empty());
    }
}
