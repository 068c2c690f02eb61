//! Park et al. (R-TSC), "Minimizing Application-Level Delay of Multi-Path TCP in Wireless
//! Networks: A Receiver-Centric Approach": the delay model and the MPTCP-LIA rate model.
//!
//! Units: windows in packets, capacities and rates in packets per second, times in seconds.
//! Subflow `r` has bottleneck capacity `c[r]`, minimum RTT `t_p[r]`, `W^BDP = c · T^p` and
//! `W^Loss`, the window at which it loses a packet (BDP plus the bottleneck buffer).
//!
//! * Eq. 5: RTT as a function of the window; Eq. 6-9: the average rate of one AIMD (Reno)
//!   subflow over a loss cycle under that time-varying RTT.
//! * Eq. 1-4: send-buffer (Kingman G/M/1), network and reordering delay; Eq. 10: the subflow
//!   rates minimizing the delay bound.
//! * Eq. 11-18: MPTCP-LIA's window increase per RTT `α_r`, with the other subflows' rates held
//!   at their averages (the paper's approximation), integrated over each subflow's loss cycle.
//! * Eq. 19: the exhaustive search for the window thresholds `W̄^Loss` giving the rates of Eq. 10.

/// TCP Reno's multiplicative decrease (β = 1/2, §III-B).
pub const BETA: f64 = 0.5;

/// Eq. 5: `T^R = max(T^p, w / c)`.
pub fn rtt(w: f64, c: f64, t_p: f64) -> f64 {
    t_p.max(w / c)
}

/// Eq. 6-9: the average rate of a single Reno flow whose window cycles between `β W^Loss` and
/// `W^Loss`. Between the regimes Eq. 9 covers (`β W^Loss ≤ W^BDP ≤ W^Loss`): capacity when the
/// buffer holds the whole decrease, and `3/4 W^Loss / T^p` when the window never reaches the
/// BDP (constant-RTT phase only).
pub fn reno_rate(c: f64, t_p: f64, w_loss: f64) -> f64 {
    let w_bdp = c * t_p;
    if w_bdp >= w_loss {
        return 0.75 * w_loss / t_p;
    }
    if w_bdp <= BETA * w_loss {
        return c;
    }
    let r = w_bdp / w_loss;
    0.75 * c / (1.0 - r + r * r)
}

/// Eq. 1: Kingman's bound on the expected send-buffer delay for arrival rate `f`, total
/// service rate `sum_x` and squared coefficient of variation `ca2` of the inter-arrival time.
/// Infinite when `sum_x <= f`.
pub fn send_buffer_delay(f: f64, sum_x: f64, ca2: f64) -> f64 {
    if sum_x <= f {
        return f64::INFINITY;
    }
    (f / sum_x) / (sum_x - f) * (1.0 + ca2) / 2.0
}

/// Eq. 2: expected forward network delay of a subflow at rate `x` (closed-loop M/M/1).
pub fn network_delay(x: f64, c: f64, t_p: f64) -> f64 {
    if x >= c {
        return f64::INFINITY;
    }
    c * t_p / (c - x) - t_p / 2.0
}

/// Eq. 4: the application-level delay bound `T^s + max_r T^n_r` over subflows with `x_r > 0`.
pub fn delay_bound(f: f64, x: &[f64], c: &[f64], t_p: &[f64], ca2: f64) -> f64 {
    let sum: f64 = x.iter().sum();
    let net = x
        .iter()
        .zip(c.iter().zip(t_p))
        .filter(|(x, _)| **x > 0.0)
        .map(|(&x, (&c, &t))| network_delay(x, c, t))
        .fold(0.0, f64::max);
    send_buffer_delay(f, sum, ca2) + net
}

/// The rates that give every used subflow the network delay `d` (0 where `d` is below a
/// subflow's `T^p/2`, its delay at rate 0).
fn rates_at_delay(d: f64, c: &[f64], t_p: &[f64]) -> Vec<f64> {
    c.iter()
        .zip(t_p)
        .map(|(&c, &t)| (c - c * t / (d + t / 2.0)).max(0.0))
        .collect()
}

/// Eq. 10: the subflow rates minimizing the delay bound (4) subject to `Σ x ≥ f`, `x ≤ c`.
/// For a fixed sum the bound is smallest when all used subflows have the same network delay
/// (§IV), so the search is over that common delay `d`: golden-section on a convex function of
/// one variable. `None` when `f` is not below the total capacity.
pub fn optimal_rates(f: f64, c: &[f64], t_p: &[f64], ca2: f64) -> Option<Vec<f64>> {
    if f >= c.iter().sum::<f64>() {
        return None;
    }
    let cost = |d: f64| {
        let x = rates_at_delay(d, c, t_p);
        let sum: f64 = x.iter().sum();
        send_buffer_delay(f, sum, ca2) + d
    };
    let sum_at = |d: f64| rates_at_delay(d, c, t_p).iter().sum::<f64>();
    // Bracket: `lo` is the delay at which the rates first carry f (the send-buffer delay is
    // infinite below it), found by bisection; the cost grows linearly in d far above it.
    let mut a = t_p.iter().map(|t| t / 2.0).fold(f64::INFINITY, f64::min);
    let mut b = a.max(1e-6);
    while sum_at(b) <= f {
        b *= 2.0;
    }
    for _ in 0..200 {
        let m = (a + b) / 2.0;
        if sum_at(m) > f {
            b = m;
        } else {
            a = m;
        }
    }
    let (lo, hi) = (b, 64.0 * b);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (lo, hi);
    for _ in 0..200 {
        let m1 = b - g * (b - a);
        let m2 = a + g * (b - a);
        if cost(m1) <= cost(m2) {
            b = m2;
        } else {
            a = m1;
        }
    }
    Some(rates_at_delay((a + b) / 2.0, c, t_p))
}

/// One subflow of the LIA model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Subflow {
    pub c: f64,
    pub t_p: f64,
    pub w_loss: f64,
}

/// Average rate and average RTT of subflow `r` over its loss cycle, its window growing by
/// `alpha(w)` packets per RTT `T(w)` (Eq. 5) from `β W^Loss` to `W^Loss`: with
/// `dt = T(w)/α(w) dw`, rate `= ∫ w/α dw / ∫ T/α dw` (Eq. 7, 17, 18).
fn cycle_average(s: &Subflow, alpha: &dyn Fn(f64, bool) -> f64) -> (f64, f64) {
    const STEPS: usize = 100;
    let w_bdp = s.c * s.t_p;
    let (w0, w1) = (BETA * s.w_loss, s.w_loss);
    let dw = (w1 - w0) / STEPS as f64;
    let (mut num, mut den, mut t_int) = (0.0, 0.0, 0.0);
    for k in 0..STEPS {
        let w = w0 + (k as f64 + 0.5) * dw;
        let t = rtt(w, s.c, s.t_p);
        let a = alpha(w, w <= w_bdp).clamp(1e-9, 1.0);
        let dt = t / a * dw;
        num += w / t * dt;
        t_int += t * dt;
        den += dt;
    }
    (num / den, t_int / den)
}

/// Eq. 11-18: the average rate of every subflow of an MPTCP-LIA connection, iterated to a
/// fixed point: each subflow's cycle is integrated with the others' rates at their current
/// averages and `b = argmax x_i / T_i` (`w_i / T_i²`) held fixed. One subflow: Reno (Eq. 9's
/// integral).
pub fn lia_rates(subflows: &[Subflow]) -> Vec<f64> {
    let n = subflows.len();
    let reno = |s: &Subflow| cycle_average(s, &|_, _| 1.0);
    let mut avg: Vec<(f64, f64)> = subflows.iter().map(reno).collect();
    if n == 1 {
        return vec![avg[0].0];
    }
    for _ in 0..60 {
        let b = (0..n)
            .max_by(|&i, &j| (avg[i].0 / avg[i].1).total_cmp(&(avg[j].0 / avg[j].1)))
            .expect("n > 0");
        let (x_b, t_b) = avg[b];
        let mut next = avg.clone();
        for (r, s) in subflows.iter().enumerate() {
            let others: f64 = (0..n).filter(|&i| i != r).map(|i| avg[i].0).sum();
            let alpha = |w: f64, constant_rtt: bool| {
                // Eq. 15 (r ≠ b) and Eq. 16 (r = b); phase 1: RTT = T^p, phase 2: w/T = c.
                let own = if constant_rtt { w / s.t_p } else { s.c };
                let denom = (own + others).powi(2);
                if r == b {
                    own * own / denom
                } else {
                    w * (x_b / t_b) / denom
                }
            };
            next[r] = cycle_average(s, &alpha);
        }
        let settled = next
            .iter()
            .zip(&avg)
            .all(|(a, b)| (a.0 - b.0).abs() <= 1e-6 * b.0.max(1e-9));
        // Damped: the coupled map can oscillate between b choices.
        for (a, nx) in avg.iter_mut().zip(&next) {
            a.0 = 0.5 * a.0 + 0.5 * nx.0;
            a.1 = 0.5 * a.1 + 0.5 * nx.1;
        }
        if settled {
            break;
        }
    }
    avg.iter().map(|a| a.0).collect()
}

/// Eq. 19: exhaustive search over `W̄^Loss_r ∈ [W^BDP_r, 2 W^BDP_r]` (`steps` points per
/// subflow) for the thresholds whose LIA rates (Eq. 11-18) are closest to `target`, in the
/// max-norm; stops at the first vector within `eps` (packets/s). Returns the thresholds and
/// their rates.
pub fn window_thresholds(
    c: &[f64],
    t_p: &[f64],
    target: &[f64],
    steps: usize,
    eps: f64,
) -> (Vec<f64>, Vec<f64>) {
    let n = c.len();
    let steps = steps.max(2);
    let mut idx = vec![0usize; n];
    let mut best = (f64::INFINITY, vec![0.0; n], vec![0.0; n]);
    loop {
        let w: Vec<f64> = (0..n)
            .map(|r| {
                let bdp = c[r] * t_p[r];
                bdp * (1.0 + idx[r] as f64 / (steps - 1) as f64)
            })
            .collect();
        let subflows: Vec<Subflow> = (0..n)
            .map(|r| Subflow {
                c: c[r],
                t_p: t_p[r],
                w_loss: w[r],
            })
            .collect();
        let x = lia_rates(&subflows);
        let err = x
            .iter()
            .zip(target)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if err < best.0 {
            best = (err, w, x);
            if err < eps {
                break;
            }
        }
        // Next grid point (odometer order).
        let mut k = 0;
        while k < n {
            idx[k] += 1;
            if idx[k] < steps {
                break;
            }
            idx[k] = 0;
            k += 1;
        }
        if k == n {
            break;
        }
    }
    (best.1, best.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn rtt_is_flat_below_the_bdp_and_linear_above() {
        assert_eq!(rtt(10.0, 1000.0, 0.05), 0.05);
        assert!(close(rtt(100.0, 1000.0, 0.05), 0.1, 1e-12));
    }

    #[test]
    fn reno_rate_is_capacity_with_half_a_window_of_buffer() {
        // W^BDP / W^Loss = 0.5: Eq. 9 gives 0.75 c / 0.75 = c.
        assert!(close(reno_rate(1000.0, 0.05, 100.0), 1000.0, 1e-12));
        // Less buffer: less than capacity; no buffer: 3/4 of it.
        assert!(reno_rate(1000.0, 0.05, 70.0) < 1000.0);
        assert!(close(reno_rate(1000.0, 0.05, 50.0), 750.0, 1e-12));
    }

    #[test]
    fn single_subflow_lia_is_eq9() {
        for w_loss in [55.0, 70.0, 90.0] {
            let s = Subflow {
                c: 1000.0,
                t_p: 0.05,
                w_loss,
            };
            let x = lia_rates(&[s])[0];
            assert!(
                close(x, reno_rate(1000.0, 0.05, w_loss), 0.01),
                "{w_loss}: {x}"
            );
        }
    }

    #[test]
    fn optimal_rates_equalize_network_delay_and_carry_f() {
        let (c, t_p) = ([3450.0, 1036.0], [0.030, 0.015]); // 40 and 12 Mbit/s of 1448 B
        let f = 3095.0; // 35.85 Mbit/s
        let x = optimal_rates(f, &c, &t_p, 1.0).expect("feasible");
        assert!(x.iter().sum::<f64>() > f);
        let d0 = network_delay(x[0], c[0], t_p[0]);
        let d1 = network_delay(x[1], c[1], t_p[1]);
        assert!(close(d0, d1, 1e-6), "{d0} {d1}");
        // Optimal: nudging the common delay either way does not lower the bound.
        let best = delay_bound(f, &x, &c, &t_p, 1.0);
        for d in [d0 * 0.97, d0 * 1.03] {
            let y = rates_at_delay(d, &c, &t_p);
            assert!(delay_bound(f, &y, &c, &t_p, 1.0) >= best - 1e-12);
        }
    }

    #[test]
    fn optimal_rates_infeasible_above_capacity() {
        assert_eq!(
            optimal_rates(5000.0, &[3000.0, 1000.0], &[0.03, 0.015], 1.0),
            None
        );
    }

    #[test]
    fn lia_coupling_slows_the_non_best_subflow() {
        // Two subflows: LIA gives the smaller one less than Reno alone would (Eq. 15, α < 1).
        let a = Subflow {
            c: 1727.0,
            t_p: 0.05,
            w_loss: 1.1 * 86.3,
        };
        let b = Subflow {
            c: 432.0,
            t_p: 0.05,
            w_loss: 1.3 * 21.6,
        };
        let x = lia_rates(&[a, b]);
        assert!(x[1] < reno_rate(b.c, b.t_p, b.w_loss), "{x:?}");
        assert!(x[0] <= a.c && x[1] <= b.c);
    }

    #[test]
    fn threshold_search_reproduces_reachable_rates() {
        let (c, t_p) = ([1727.0, 432.0], [0.05, 0.05]);
        let w = [1.4 * 86.35, 1.7 * 21.6];
        let subflows = [
            Subflow {
                c: c[0],
                t_p: t_p[0],
                w_loss: w[0],
            },
            Subflow {
                c: c[1],
                t_p: t_p[1],
                w_loss: w[1],
            },
        ];
        let target = lia_rates(&subflows);
        let (found, x) = window_thresholds(&c, &t_p, &target, 41, 0.0);
        for r in 0..2 {
            assert!(close(x[r], target[r], 0.02), "{x:?} vs {target:?}");
            assert!(found[r] >= c[r] * t_p[r] && found[r] <= 2.0 * c[r] * t_p[r]);
        }
    }
}
