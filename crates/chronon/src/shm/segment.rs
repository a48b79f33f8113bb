//! Anonymous shared-memory segments: a `memfd` (no name in `/dev/shm`, so nothing can be left
//! behind after any kind of exit), mode 0600, its size sealed, mapped `MAP_SHARED`.
//!
//! A segment reaches another process by descriptor: inherited across `exec` (the launcher
//! clears `FD_CLOEXEC` in the child only, see `launch.rs`) or opened later through
//! `/proc/<owner pid>/fd/<fd>` ([`Segment::open_remote`]), which the kernel allows only to the
//! same user.

use std::ffi::c_void;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

use rustix::fs::{MemfdFlags, Mode, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

/// A mapped shared-memory segment; unmapped (and its descriptor closed) on drop.
pub struct Segment {
    fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
}

// Safety: the mapping is plain memory shared on purpose; every access to it goes through
// atomics or through types (`ShmSafe`) whose protocols (README.md) make concurrent use sound.
unsafe impl Send for Segment {}
// Safety: see `Send`: `Segment` itself hands out only a base pointer and a length.
unsafe impl Sync for Segment {}

impl fmt::Debug for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Segment")
            .field("fd", &self.fd.as_raw_fd())
            .field("len", &self.len)
            .finish()
    }
}

impl Segment {
    /// Creates a zero-filled anonymous segment of `len` bytes (rounded up to a page), readable
    /// and writable only by this user, its size sealed. The descriptor is close-on-exec.
    pub fn create(len: usize) -> io::Result<Segment> {
        let len = len.max(1).next_multiple_of(page_size());
        let fd = rustix::fs::memfd_create(
            "chronon-shm",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
        rustix::fs::ftruncate(&fd, len as u64)?;
        // No process may shrink it under another's mapping (that would be SIGBUS) or grow it.
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
        Self::map(fd, len)
    }

    /// Maps a segment from a descriptor this process already holds (e.g. inherited), taking
    /// ownership of it. Only a memfd sealed against shrinking is accepted: a file that could
    /// shrink under the mapping would turn reads into SIGBUS.
    pub fn from_fd(fd: OwnedFd) -> io::Result<Segment> {
        let seals = rustix::fs::fcntl_get_seals(&fd)
            .map_err(|_| io::Error::other("not a shared-memory segment (no seals)"))?;
        if !seals.contains(SealFlags::SHRINK) {
            return Err(io::Error::other("not a sealed shared-memory segment"));
        }
        let len = usize::try_from(rustix::fs::fstat(&fd)?.st_size)
            .map_err(|_| io::Error::other("segment size"))?;
        if len == 0 {
            return Err(io::Error::other("empty segment"));
        }
        Self::map(fd, len)
    }

    /// Maps a segment from a raw descriptor number (one passed on the command line or in the
    /// environment).
    ///
    /// # Safety
    /// `fd` must be an open descriptor of a segment that nothing else in this process owns.
    pub unsafe fn from_raw_fd(fd: RawFd) -> io::Result<Segment> {
        // Safety: the caller promises `fd` is open and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Self::from_fd(fd)
    }

    /// Opens the segment that process `pid` holds as descriptor `fd`, through `/proc` (allowed
    /// to the same user only), and maps it. The new descriptor is close-on-exec.
    pub fn open_remote(pid: u32, fd: RawFd) -> io::Result<Segment> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/{pid}/fd/{fd}"))?;
        Self::from_fd(OwnedFd::from(file))
    }

    fn map(fd: OwnedFd, len: usize) -> io::Result<Segment> {
        // Safety: a fresh shared mapping of `len` bytes of `fd`; nothing else is mapped there,
        // and the mapping lives until `drop` unmaps it.
        let p = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )?
        };
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap null"))?;
        Ok(Segment { fd, base, len })
    }

    /// The first byte of the mapping in this process (page aligned; differs per process).
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a segment has at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The descriptor (close-on-exec in this process).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // Safety: `base`/`len` are exactly the mapping made in `map`, and `Segment` is the only
        // owner of it; references into it cannot outlive `self` (they borrow it).
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast::<c_void>(), self.len) };
    }
}

/// The system page size.
pub fn page_size() -> usize {
    rustix::param::page_size()
}
