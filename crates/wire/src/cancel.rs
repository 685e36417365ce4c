//! Query cancellation (`PQcancel`): a CancelRequest sent on a new connection.
//!
//! Owns: remembering where the backend lives and its cancel key; sending the
//! request and waiting for the server to close the socket, as libpq does.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

/// Where to send a cancel request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CancelAddr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Cancels the query running on a connection; can be sent to another thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelToken {
    addr: CancelAddr,
    process_id: i32,
    secret_key: Vec<u8>,
}

/// `CANCEL_REQUEST_CODE` (1234 << 16 | 5678).
const CANCEL_REQUEST_CODE: u32 = 80_877_102;

impl CancelToken {
    pub(crate) fn new(addr: CancelAddr, process_id: i32, secret_key: Vec<u8>) -> CancelToken {
        CancelToken {
            addr,
            process_id,
            secret_key,
        }
    }

    /// The CancelRequest packet.
    fn packet(&self) -> Vec<u8> {
        let len = 12 + self.secret_key.len();
        let mut p = Vec::with_capacity(len);
        p.extend_from_slice(&(len as u32).to_be_bytes());
        p.extend_from_slice(&CANCEL_REQUEST_CODE.to_be_bytes());
        p.extend_from_slice(&self.process_id.to_be_bytes());
        p.extend_from_slice(&self.secret_key);
        p
    }

    /// Sends the cancel request (blocking, a few seconds at most). Success only
    /// means the request was delivered; the server may have nothing to cancel.
    pub fn cancel(&self) -> io::Result<()> {
        let timeout = Some(Duration::from_secs(10));
        let packet = self.packet();
        let mut buf = [0u8; 1];
        match &self.addr {
            CancelAddr::Tcp(a) => {
                let mut s = TcpStream::connect_timeout(a, Duration::from_secs(10))?;
                s.set_read_timeout(timeout)?;
                s.set_write_timeout(timeout)?;
                s.write_all(&packet)?;
                // The server closes the socket when done; wait for that, as libpq.
                let _ = s.read(&mut buf);
            }
            CancelAddr::Unix(p) => {
                let mut s = crate::transport::connect_unix(p)?;
                s.set_read_timeout(timeout)?;
                s.set_write_timeout(timeout)?;
                s.write_all(&packet)?;
                let _ = s.read(&mut buf);
            }
        }
        Ok(())
    }

    /// Backend PID the token targets.
    pub fn process_id(&self) -> i32 {
        self.process_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_layout() {
        let t = CancelToken::new(CancelAddr::Unix("/x".into()), 0x01020304, vec![9, 8, 7, 6]);
        assert_eq!(
            t.packet(),
            vec![0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e, 1, 2, 3, 4, 9, 8, 7, 6]
        );
    }
}
