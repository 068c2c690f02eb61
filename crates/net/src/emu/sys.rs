//! The few system calls the emulator needs, wrapped so that every failure is an `io::Error`
//! naming what was attempted: namespaces (`setns`), AF_PACKET sockets, the legacy ethtool ioctl
//! (there is no `ethtool` binary here) and the monotonic clock.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;

/// Where `ip netns add` puts its namespace handles.
pub const NETNS_DIR: &str = "/run/netns";

fn ctx(what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn check(ret: libc::c_int, what: impl std::fmt::Display) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(ctx(what)(io::Error::last_os_error()))
    } else {
        Ok(ret)
    }
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; callers pass clocks that always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in nanoseconds: the one clock every namespace and thread shares, so that a
/// timestamp taken in the server namespace can be compared with one taken in the client's.
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds: the clock of the kernel's receive timestamps (SO_TIMESTAMPNS).
pub fn real_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// One `recvmsg` into `buf` with `flags`: the length and the kernel's receive time
/// (CLOCK_REALTIME ns) when the socket has SO_TIMESTAMPNS on. Errors are the raw OS errors.
pub fn recv_stamped(
    fd: RawFd,
    buf: &mut [u8],
    flags: libc::c_int,
) -> io::Result<(usize, Option<u64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points at live buffers of the lengths it states.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// Moves the calling THREAD into the named network namespace (sockets it creates afterwards
/// live there; other threads are unaffected).
pub fn enter_netns(name: &str) -> io::Result<()> {
    let path = format!("{NETNS_DIR}/{name}");
    let f = File::open(&path).map_err(ctx(format!("open {path}")))?;
    // SAFETY: f is an open namespace file descriptor.
    check(
        unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) },
        format!("setns {name}"),
    )?;
    Ok(())
}

/// Timer slack 1 ns for this thread (the default 50 us would blur every deadline) and, when
/// allowed, a real-time priority so that the delay line is not late behind other work.
pub fn precise_timing() {
    // SAFETY: plain prctl/sched calls on the current thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        let param = libc::sched_param { sched_priority: 10 };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
    }
}

/// Sleeps until `deadline_ns` (CLOCK_MONOTONIC) or until one of `fds` is readable. Returns the
/// number of readable descriptors (0: the deadline passed).
pub fn poll_until(fds: &mut [libc::pollfd], deadline_ns: Option<u64>) -> io::Result<usize> {
    let ts;
    let tsp = match deadline_ns {
        Some(d) => {
            let wait = d.saturating_sub(mono_ns());
            ts = libc::timespec {
                tv_sec: (wait / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait % 1_000_000_000) as libc::c_long,
            };
            &ts as *const libc::timespec
        }
        None => std::ptr::null(),
    };
    for fd in fds.iter_mut() {
        fd.revents = 0;
    }
    // SAFETY: fds is a valid slice of pollfd; tsp is null or points at ts, alive here.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(ctx("ppoll")(e));
        }
        // Interrupted: the caller looks again, as after a readable descriptor.
        return Ok(1);
    }
    Ok(r as usize)
}

fn ifindex(ifname: &str) -> io::Result<libc::c_int> {
    let c = CString::new(ifname).expect("interface names have no NUL");
    // SAFETY: c is a valid C string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(ctx(format!("interface {ifname}"))(
            io::Error::last_os_error(),
        ));
    }
    Ok(idx as libc::c_int)
}

/// A non-blocking AF_PACKET socket bound to one interface of the current namespace: it reads
/// every frame the interface receives (not the ones it sends) and sends whole Ethernet frames.
pub struct PacketSocket {
    fd: OwnedFd,
}

const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

impl PacketSocket {
    pub fn open(ifname: &str) -> io::Result<PacketSocket> {
        let what = format!("AF_PACKET socket on {ifname}");
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket() with constant arguments.
        let raw = check(
            unsafe {
                libc::socket(
                    libc::AF_PACKET,
                    libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    proto as libc::c_int,
                )
            },
            &what,
        )?;
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        setsockopt(
            raw,
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            &one,
            "PACKET_IGNORE_OUTGOING",
        )?;
        // Room for a full 500 ms buffer at 100 Mbit/s arriving at once: frames the kernel drops
        // here would be losses the scenario does not have (counted by `drops()` anyway).
        let buf: libc::c_int = 16 << 20;
        setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &buf,
            "SO_RCVBUFFORCE",
        )?;
        setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            &buf,
            "SO_SNDBUFFORCE",
        )?;
        // The kernel's receive time of each frame: the link model takes a frame in when it
        // arrived, not when the thread woke up to read it (on a virtual machine an idle vCPU
        // takes hundreds of microseconds to wake).
        setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one,
            "SO_TIMESTAMPNS",
        )?;
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex(ifname)?;
        // SAFETY: sll is a valid sockaddr_ll of the given length.
        check(
            unsafe {
                libc::bind(
                    raw,
                    &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            },
            format!("bind {what}"),
        )?;
        Ok(PacketSocket { fd })
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// One frame into `buf` with the kernel's receive time (CLOCK_REALTIME ns, when the kernel
    /// gave one), or `None` when nothing is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, Option<u64>)>> {
        match recv_stamped(self.raw(), buf, libc::MSG_TRUNC) {
            Ok(got) => Ok(Some(got)),
            Err(e) => match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(ctx("recv on packet socket")(e)),
            },
        }
    }

    /// Sends one frame; a full device queue is reported as `false` (the frame is lost, as on a
    /// real wire) rather than as an error.
    pub fn send(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: frame is valid for its length.
        let n = unsafe {
            libc::send(
                self.raw(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => Ok(false),
                _ => Err(ctx("send on packet socket")(e)),
            };
        }
        Ok(true)
    }

    /// Frames the kernel dropped because this socket's buffer was full (since the last call).
    pub fn drops(&self) -> u64 {
        let mut st = [0u32; 2];
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: PACKET_STATISTICS fills a tpacket_stats {packets, drops}.
        let r = unsafe {
            libc::getsockopt(
                self.raw(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                st.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            )
        };
        if r < 0 {
            0
        } else {
            u64::from(st[1])
        }
    }
}

pub fn setsockopt<T>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
    what: &str,
) -> io::Result<()> {
    // SAFETY: value points at a T of size_of::<T>() bytes.
    check(
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                value as *const T as *const libc::c_void,
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        },
        what,
    )?;
    Ok(())
}

// Legacy ethtool commands (include/uapi/linux/ethtool.h), still served by the kernel's
// `ethtool_set_one_feature`.
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfreqData {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// Turns off checksum, scatter-gather, TSO, GSO and GRO offloads of an interface in the
/// current namespace. Needed because frames cross user space: a TSO super-frame would enter the
/// emulated link as one 64 KB packet, and a frame with a partial (offloaded) checksum would be
/// dropped by the receiving stack once it is re-injected.
pub fn disable_offloads(ifname: &str) -> io::Result<()> {
    // SAFETY: socket() with constant arguments.
    let raw = check(
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) },
        "ethtool socket",
    )?;
    // SAFETY: raw is ours.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    for cmd in [
        ETHTOOL_SGRO,
        ETHTOOL_SGSO,
        ETHTOOL_STSO,
        ETHTOOL_SSG,
        ETHTOOL_STXCSUM,
    ] {
        let mut value = EthtoolValue { cmd, data: 0 };
        let mut ifr = IfreqData {
            name: [0; libc::IFNAMSIZ],
            data: &mut value as *mut EthtoolValue as *mut libc::c_void,
            _pad: [0; 16],
        };
        ifr.name[..ifname.len()].copy_from_slice(ifname.as_bytes());
        // SAFETY: SIOCETHTOOL with an ifreq whose data points at a live ethtool_value.
        check(
            unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr) },
            format!("ethtool 0x{cmd:x} on {ifname}"),
        )?;
    }
    Ok(())
}

/// Runs a command, turning a non-zero exit into an error carrying its stderr.
pub fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.output().map_err(ctx(format!("{cmd:?}")))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{:?} failed: {}",
            cmd,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// True if `pid` is alive and is an `mpsched-emu` process (guards against PID reuse before
/// signalling a PID read from a state file).
pub fn is_emulator(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            c.split(|&b| b == 0)
                .next()
                .is_some_and(|arg0| String::from_utf8_lossy(arg0).contains("mpsched-emu"))
        })
        .unwrap_or(false)
}
