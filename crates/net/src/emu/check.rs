//! `mpsched emu check`: measures, from the endpoints, what each emulated link really does and
//! holds it against the scenario. Both endpoints read the same CLOCK_MONOTONIC, so one-way
//! delays are measured directly (no clock-offset estimation).
//!
//! Per path and direction:
//! - delay: small UDP probes (142-byte frames) at no more than 5% of the link rate, so they never
//!   queue; expected = propagation delay + the probe's serialization time;
//! - loss: the share of probes that did not arrive, against `loss`;
//! - rate (rate-limited directions): a UDP flood of full-size frames at 1.5x the rate, long
//!   enough to fill the buffer; rate = frames x wire bits / (last - first arrival);
//! - queue: the largest one-way delay in the flood minus the empty-link delay, against the
//!   buffer the scenario sets (the emulator's drop-tail limit; there is no tbf whose
//!   `rate x latency + burst` could add to it).

use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use mpsched_sim::link::{Link, QueueLimit};
use mpsched_sim::scenario::{LinkSpec, Scenario};
use mpsched_sim::trace::Trace;
use serde::Serialize;

use super::sys::{self, mono_ns, real_ns};
use super::topo::{Role, Topology};

const PROBE_PAYLOAD: usize = 100;
const FLOOD_PAYLOAD: usize = 1472;
/// Ethernet + IPv4 + UDP headers.
const UDP_FRAME_OVERHEAD: usize = 14 + 20 + 8;

#[derive(Clone, Debug, Serialize)]
pub struct DirCheck {
    pub path: String,
    pub direction: &'static str,
    pub delay_expected_ms: f64,
    pub delay_mean_ms: f64,
    pub delay_median_ms: f64,
    pub delay_p99_ms: f64,
    /// Median measured minus expected (the median: a softirq deferred to ksoftirqd on a
    /// loaded host delays single probes by tens of ms, which the mean would smear over all).
    pub delay_error_ms: f64,
    /// Mean measured minus expected.
    pub delay_mean_error_ms: f64,
    pub loss_expected: f64,
    pub loss_measured: f64,
    pub probes: u64,
    pub rate_expected_bps: Option<f64>,
    pub rate_measured_bps: Option<f64>,
    pub rate_error_pct: Option<f64>,
    pub queue_expected_ms: Option<f64>,
    pub queue_measured_ms: Option<f64>,
    pub trace: bool,
}

fn rate_of(spec: &LinkSpec) -> io::Result<Option<(f64, bool)>> {
    if let Some(p) = &spec.trace {
        let t = Trace::load(p).map_err(|e| io::Error::other(format!("trace {p}: {e}")))?;
        return Ok(Some((t.mean_rate_bps(), true)));
    }
    Ok(spec.rate_bps.filter(|r| r.is_finite()).map(|r| (r, false)))
}

/// Bytes the link model buffers at most for this spec.
fn queue_limit_bytes(spec: &LinkSpec) -> io::Result<Option<u64>> {
    let trace = match &spec.trace {
        Some(p) => Some(Arc::new(
            Trace::load(p).map_err(|e| io::Error::other(format!("trace {p}: {e}")))?,
        )),
        None => None,
    };
    let link: Link<()> = Link::new(spec, trace, 1514);
    Ok(match link.queue_limit() {
        QueueLimit::Bytes(b) => Some(b),
        QueueLimit::Packets(n) => Some(n * 1514),
        // Bounds queue and propagation together: no drop-tail queue size to check.
        QueueLimit::Pipe(_) | QueueLimit::Unlimited => None,
    })
}

fn udp_in(ns: &str, addr: String, port: u16) -> io::Result<UdpSocket> {
    let ns = ns.to_string();
    super::topo::in_netns(&ns, move || {
        let s = UdpSocket::bind(SocketAddrV4::new(addr.parse().unwrap(), port))?;
        let buf: libc::c_int = 16 << 20;
        sys::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&s),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &buf,
            "SO_RCVBUFFORCE",
        )?;
        Ok(s)
    })
}

/// Arrivals: (sequence number, send time, receive time), all CLOCK_REALTIME ns.
fn receive_all(sock: UdpSocket, until_ns: u64) -> io::Result<Vec<(u32, u64, u64)>> {
    sys::precise_timing();
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let one: libc::c_int = 1;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
    sys::setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPNS,
        &one,
        "SO_TIMESTAMPNS",
    )?;
    let mut buf = [0u8; 2048];
    let mut got = Vec::new();
    while mono_ns() < until_ns {
        match sys::recv_stamped(fd, &mut buf, 0) {
            Ok((n, stamp)) if n >= 12 => {
                let now = stamp.unwrap_or_else(real_ns);
                let seq = u32::from_be_bytes(buf[..4].try_into().unwrap());
                let sent = u64::from_be_bytes(buf[4..12].try_into().unwrap());
                got.push((seq, sent, now));
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Sends `count` datagrams of `payload` bytes at `pps`, stamping sequence and send time.
fn send_paced(
    sock: &UdpSocket,
    to: SocketAddrV4,
    payload: usize,
    pps: f64,
    count: u64,
) -> io::Result<()> {
    sys::precise_timing();
    let mut buf = vec![0u8; payload];
    let start = mono_ns();
    let mut sent = 0u64;
    while sent < count {
        let due = (((mono_ns() - start) as f64 / 1e9) * pps) as u64 + 1;
        while sent < due.min(count) {
            buf[..4].copy_from_slice(&(sent as u32).to_be_bytes());
            buf[4..12].copy_from_slice(&real_ns().to_be_bytes());
            match sock.send_to(&buf, to) {
                Ok(_) => {}
                // A full socket buffer at the sender is the sender's loss, not the link's.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) => return Err(e),
            }
            sent += 1;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(())
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Checks one direction of one path. `forward` = server to client.
fn check_dir(
    topo: &Topology,
    i: usize,
    name: &str,
    spec: &LinkSpec,
    forward: bool,
    port: u16,
) -> io::Result<DirCheck> {
    let (src_role, dst_role, src_addr, dst_addr) = if forward {
        (
            Role::Server,
            Role::Client,
            topo.server_addr(i),
            topo.client_addr(i),
        )
    } else {
        (
            Role::Client,
            Role::Server,
            topo.client_addr(i),
            topo.server_addr(i),
        )
    };
    let rate = rate_of(spec)?;
    let trace = rate.is_some_and(|(_, t)| t);
    let probe_frame = (PROBE_PAYLOAD + UDP_FRAME_OVERHEAD) as f64;
    let ser = |frame: f64| match rate {
        Some((r, false)) => frame * 8.0 / r,
        _ => 0.0,
    };
    // Probes: at most 5% of the rate, at least 2 ms apart; more of them when loss is measured.
    let interval = rate.map_or(0.002, |(r, _)| (probe_frame * 8.0 / (0.05 * r)).max(0.002));
    let probes: u64 = if spec.loss > 0.0 { 1000 } else { 200 };
    let rx = udp_in(&topo.ns(dst_role), dst_addr.clone(), port)?;
    let tx = udp_in(&topo.ns(src_role), src_addr, 0)?;
    let to = SocketAddrV4::new(dst_addr.parse().unwrap(), port);
    let listen_for = probes as f64 * interval + spec.delay_s + 0.3;
    let until = mono_ns() + (listen_for * 1e9) as u64;
    let receiver = std::thread::spawn(move || receive_all(rx, until));
    send_paced(&tx, to, PROBE_PAYLOAD, 1.0 / interval, probes)?;
    let got = receiver
        .join()
        .map_err(|_| io::Error::other("receiver panicked"))??;
    let mut owd: Vec<f64> = got
        .iter()
        .map(|&(_, s, r)| r.saturating_sub(s) as f64 / 1e6)
        .collect();
    owd.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let delay_expected_ms = (spec.delay_s + ser(probe_frame)) * 1e3;
    let delay_mean_ms = owd.iter().sum::<f64>() / owd.len().max(1) as f64;
    let mut out = DirCheck {
        path: name.to_string(),
        direction: if forward { "forward" } else { "reverse" },
        delay_expected_ms,
        delay_mean_ms,
        delay_median_ms: percentile(&owd, 0.5),
        delay_p99_ms: percentile(&owd, 0.99),
        delay_error_ms: percentile(&owd, 0.5) - delay_expected_ms,
        delay_mean_error_ms: delay_mean_ms - delay_expected_ms,
        loss_expected: spec.loss,
        loss_measured: 1.0 - got.len() as f64 / probes as f64,
        probes,
        rate_expected_bps: None,
        rate_measured_bps: None,
        rate_error_pct: None,
        queue_expected_ms: None,
        queue_measured_ms: None,
        trace,
    };
    let Some((rate_bps, _)) = rate else {
        return Ok(out);
    };
    // Flood: 1.5x the rate, long enough to fill the buffer (capped at 3 s).
    let limit = queue_limit_bytes(spec)?;
    let queue_s = limit.map_or(0.0, |b| b as f64 * 8.0 / rate_bps);
    let duration = (2.5 * queue_s).clamp(1.0, 3.0);
    let frame = (FLOOD_PAYLOAD + UDP_FRAME_OVERHEAD) as f64;
    // What the link model charges per frame: the frame, or for a trace the IP packet + 4.
    let wire = if trace { frame - 14.0 + 4.0 } else { frame };
    let pps = 1.5 * rate_bps / (wire * 8.0);
    let count = (pps * duration) as u64;
    let rx = udp_in(&topo.ns(dst_role), dst_addr, port + 1)?;
    let until = mono_ns() + ((duration + queue_s + spec.delay_s + 0.5) * 1e9) as u64;
    let receiver = std::thread::spawn(move || receive_all(rx, until));
    let to = SocketAddrV4::new(to.ip().to_owned(), port + 1);
    send_paced(&tx, to, FLOOD_PAYLOAD, pps, count)?;
    let got = receiver
        .join()
        .map_err(|_| io::Error::other("receiver panicked"))??;
    if got.len() >= 10 {
        let first = got.first().unwrap().2;
        let last = got.last().unwrap().2;
        let measured = (got.len() - 1) as f64 * wire * 8.0 / ((last - first) as f64 / 1e9);
        out.rate_expected_bps = Some(rate_bps);
        out.rate_measured_bps = Some(measured);
        out.rate_error_pct = Some((measured / rate_bps - 1.0) * 100.0);
        let max_owd = got
            .iter()
            .map(|&(_, s, r)| r.saturating_sub(s))
            .max()
            .unwrap() as f64
            / 1e9;
        let base = spec.delay_s + ser(frame);
        out.queue_measured_ms = Some((max_owd - base) * 1e3);
        out.queue_expected_ms = limit.map(|b| b as f64 * 8.0 / rate_bps * 1e3);
    }
    Ok(out)
}

/// Checks every path, forward then reverse.
pub fn check(topo: &Topology, sc: &Scenario, progress: &dyn Fn(&str)) -> io::Result<Vec<DirCheck>> {
    let mut out = Vec::new();
    for (i, p) in sc.paths.iter().enumerate() {
        for (forward, spec) in [(true, &p.forward), (false, &p.reverse)] {
            progress(&format!(
                "checking {} {}",
                p.name,
                if forward { "forward" } else { "reverse" }
            ));
            let port = 40000 + (i as u16) * 10 + if forward { 0 } else { 5 };
            out.push(check_dir(topo, i, &p.name, spec, forward, port)?);
        }
    }
    Ok(out)
}

/// The human-readable table.
pub fn table(rows: &[DirCheck]) -> String {
    let mut s = format!(
        "{:<10} {:<8} {:>9} {:>9} {:>9} {:>8} {:>13} {:>13} {:>8} {:>9} {:>9} {:>7} {:>7}\n",
        "path",
        "dir",
        "delay ms",
        "median",
        "err ms",
        "p99 ms",
        "rate",
        "measured",
        "err %",
        "queue ms",
        "held ms",
        "loss",
        "meas"
    );
    let opt = |v: Option<f64>, scale: f64, prec: usize| {
        v.map_or("-".to_string(), |x| format!("{:.*}", prec, x * scale))
    };
    for r in rows {
        s += &format!(
            "{:<10} {:<8} {:>9.3} {:>9.3} {:>9.3} {:>8.3} {:>13} {:>13} {:>8} {:>9} {:>9} {:>7.4} {:>7.4}{}\n",
            r.path,
            r.direction,
            r.delay_expected_ms,
            r.delay_median_ms,
            r.delay_error_ms,
            r.delay_p99_ms,
            opt(r.rate_expected_bps, 1e-6, 3) + if r.rate_expected_bps.is_some() { " Mb" } else { "" },
            opt(r.rate_measured_bps, 1e-6, 3) + if r.rate_measured_bps.is_some() { " Mb" } else { "" },
            opt(r.rate_error_pct, 1.0, 2),
            opt(r.queue_expected_ms, 1.0, 1),
            opt(r.queue_measured_ms, 1.0, 1),
            r.loss_expected,
            r.loss_measured,
            if r.trace { "  (trace: rate vs its mean, delay includes opportunity wait)" } else { "" }
        );
    }
    s
}
