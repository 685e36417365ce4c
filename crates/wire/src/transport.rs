//! Byte transports under a connection: TCP or Unix socket, optionally wrapped in
//! TLS (rustls). Offers both blocking helpers (setup) and non-blocking `try_*`
//! calls that never allocate (the engine's hot path).
//!
//! Owns: hiding plain vs TLS. Must not know about protocol messages.

use bytes::BytesMut;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// Connects to a Unix socket path (`@name` = Linux abstract namespace).
pub(crate) fn connect_unix(path: &Path) -> io::Result<UnixStream> {
    let s = path.to_string_lossy();
    if let Some(name) = s.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
        UnixStream::connect_addr(&addr)
    } else {
        UnixStream::connect(path)
    }
}

/// A connected socket.
#[derive(Debug)]
pub(crate) enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Socket {
    pub(crate) fn set_nonblocking(&self, nb: bool) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.set_nonblocking(nb),
            Socket::Unix(s) => s.set_nonblocking(nb),
        }
    }

    pub(crate) fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        // A zero duration is rejected by std; the caller treats "no time left" itself.
        let t = t.map(|d| d.max(Duration::from_millis(1)));
        match self {
            Socket::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Socket::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
        }
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Socket::Tcp(s) => s.as_raw_fd(),
            Socket::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// `send(fd, buf, MSG_NOSIGNAL)` (what std's socket write does) as a raw system call.
/// glibc's wrappers of cancellation points such as send(2) and read(2) switch the
/// thread's cancellation type before and after every call; nothing here uses thread
/// cancellation, and these calls run several times per transaction.
fn raw_send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the duration of the call;
    // no destination address (a connected socket). Every argument is passed as a long,
    // as the kernel's system call convention expects.
    let n = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            libc::c_long::from(fd),
            buf.as_ptr() as libc::c_long,
            buf.len() as libc::c_long,
            libc::c_long::from(libc::MSG_NOSIGNAL),
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Writes as much of `buf` as the unencrypted socket `fd` takes now (retrying when
/// interrupted). What [`crate::Connection::try_write`] does on a plain connection, for
/// callers that keep the descriptor at hand.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
pub fn write_plain(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    loop {
        match raw_send(fd, buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Makes room for a read when less than a quarter chunk is left.
#[inline]
fn reserve_read(buf: &mut BytesMut) {
    if buf.capacity() - buf.len() < READ_CHUNK / 4 {
        buf.reserve(READ_CHUNK);
    }
}

/// Appends what the unencrypted socket `fd` holds now to `buf` (one read); `Ok(0)` at
/// end of stream. What [`crate::Connection::try_read`] does on a plain connection.
#[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
pub fn read_plain(fd: RawFd, buf: &mut BytesMut) -> io::Result<usize> {
    reserve_read(buf);
    loop {
        let spare = buf.spare_capacity_mut();
        // SAFETY: recvfrom(2) writes at most spare.len() bytes into the spare capacity;
        // exactly the n bytes it reports are then marked initialized; no source address
        // is asked for. A raw system call: see `raw_send`. recvfrom rather than read:
        // the kernel's read path on a socket goes through the file layer first.
        let n = unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                libc::c_long::from(fd),
                spare.as_mut_ptr() as libc::c_long,
                spare.len() as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let n = n as usize;
        // SAFETY: see above; n <= spare.len().
        unsafe { buf.set_len(buf.len() + n) };
        return Ok(n);
    }
}

/// Plain or TLS transport.
#[derive(Debug)]
pub(crate) enum Transport {
    Plain(Socket),
    Tls(Box<rustls::ClientConnection>, Socket),
}

/// Minimum free space to offer a read.
const READ_CHUNK: usize = 16 * 1024;

impl Transport {
    pub(crate) fn socket(&self) -> &Socket {
        match self {
            Transport::Plain(s) | Transport::Tls(_, s) => s,
        }
    }

    pub(crate) fn is_tls(&self) -> bool {
        matches!(self, Transport::Tls(..))
    }

    /// Writes as much of `buf` as the transport accepts now. With TLS the bytes may
    /// be held in the TLS layer: see [`Transport::wants_write`].
    pub(crate) fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => write_plain(s.as_raw_fd(), buf),
            Transport::Tls(tls, s) => {
                // Push out what is pending first, so the TLS buffer stays bounded.
                Self::flush_tls(tls, s)?;
                let n = tls.writer().write(buf)?;
                match Self::flush_tls(tls, s) {
                    Ok(()) => Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(n),
                    Err(e) => Err(e),
                }
            }
        }
    }

    fn flush_tls(tls: &mut rustls::ClientConnection, s: &mut Socket) -> io::Result<()> {
        while tls.wants_write() {
            match tls.write_tls(s) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether encrypted bytes are waiting to be written (only ever true with TLS).
    pub(crate) fn wants_write(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(tls, _) => tls.wants_write(),
        }
    }

    /// Writes bytes held in the TLS layer; `WouldBlock` if the socket is full.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(_) => Ok(()),
            Transport::Tls(tls, s) => Self::flush_tls(tls, s),
        }
    }

    /// Appends whatever can be read now to `buf`; `Ok(0)` at end of stream.
    pub(crate) fn try_read(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => read_plain(s.as_raw_fd(), buf),
            Transport::Tls(tls, s) => loop {
                reserve_read(buf);
                let start = buf.len();
                let room = (buf.capacity() - start).min(READ_CHUNK);
                buf.resize(start + room, 0);
                let r = tls.reader().read(&mut buf[start..]);
                match r {
                    Ok(n) => {
                        buf.truncate(start + n);
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        buf.truncate(start);
                    }
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        buf.truncate(start);
                        return Ok(0);
                    }
                    Err(e) => {
                        buf.truncate(start);
                        return Err(e);
                    }
                }
                // Opportunistically send pending TLS records (e.g. key updates).
                match Self::flush_tls(tls, s) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                match tls.read_tls(s) {
                    Ok(0) => return Ok(0),
                    Ok(_) => {
                        if let Err(e) = tls.process_new_packets() {
                            // Send the alert, if any, then fail.
                            let _ = Self::flush_tls(tls, s);
                            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                        }
                    }
                    Err(e) => return Err(e),
                }
            },
        }
    }

    /// Blocking: writes all of `buf` (socket must be in blocking mode).
    pub(crate) fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.try_write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        loop {
            match self.flush() {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
