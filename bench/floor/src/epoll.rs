//! A level-triggered epoll instance, on libc, for the harnesses' event loops.

use std::io;
use std::os::fd::RawFd;

/// An epoll file descriptor, closed on drop.
pub struct Epoll(RawFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 has no memory arguments.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll(fd))
    }

    /// Watches `fd` for input, reported with `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN, token)
    }

    /// `epoll_ctl`: `op` (`EPOLL_CTL_ADD`, `_MOD`, `_DEL`) of `fd` with the events of
    /// `interest`, reported with `token`.
    pub fn control(&self, op: i32, fd: RawFd, interest: i32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: interest as u32,
            u64: token,
        };
        // SAFETY: `event` is a valid epoll_event for the duration of the call.
        if unsafe { libc::epoll_ctl(self.0, op, fd, &mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` (-1: without end) for events; how many were written.
    pub fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        loop {
            // SAFETY: the kernel writes at most `events.len()` entries into `events`.
            let n = unsafe {
                libc::epoll_wait(self.0, events.as_mut_ptr(), events.len() as i32, timeout_ms)
            };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: the fd is owned by this value and closed once.
        unsafe { libc::close(self.0) };
    }
}
