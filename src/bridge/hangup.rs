//! Whether a pipe's peer has hung up, asked without reading or writing it.

/// Whether the other end of a pipe or socket is closed: the writer of a read end (whose
/// data may still be unread), the reader of a write end.
pub(super) fn peer_gone(fd: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::empty())];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}
