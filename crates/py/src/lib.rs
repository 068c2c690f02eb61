//! `mpsched._core`: the thin binding between Python and the simulator.
//!
//! It converts types and releases the GIL, nothing more: scenarios arrive as resolved JSON
//! (schema in crates/sim/src/scenario.rs), results leave as JSON text. User errors become
//! `ValueError` with the engine's one-line message.

// pyo3 0.22's #[pyfunction] expansion trips this lint on every fallible function.
#![allow(clippy::useless_conversion)]

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use mpsched_sim::scenario::Scenario;
use mpsched_sim::tracing::Side;

fn parse(scenario_json: &str) -> PyResult<Scenario> {
    serde_json::from_str(scenario_json).map_err(|e| PyValueError::new_err(format!("scenario: {e}")))
}

/// Run one job; user errors become `Err(message)`.
pub fn run_job(scenario_json: &str, scheduler: &str, seed: u64) -> Result<String, String> {
    let sc: Scenario = serde_json::from_str(scenario_json).map_err(|e| format!("scenario: {e}"))?;
    let v = mpsched_sim::run(&sc, scheduler, seed).map_err(|e| e.to_string())?;
    Ok(v.to_string())
}

/// Ctrl-C: `interrupt(True)` stops every running simulation within a few thousand events;
/// `interrupt(False)` allows runs again.
#[pyfunction]
fn interrupt(on: bool) {
    mpsched_sim::set_interrupt(on);
}

#[pyfunction]
fn version() -> &'static str {
    mpsched_sim::VERSION
}

#[pyfunction]
fn schedulers() -> Vec<(String, String)> {
    mpsched_sim::scheduler_list()
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[pyfunction]
fn validate(scenario_json: &str, scheduler: &str) -> PyResult<()> {
    let sc = parse(scenario_json)?;
    mpsched_sim::validate(&sc, scheduler).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pyfunction]
#[pyo3(signature = (scenario_json, scheduler, seed, trace_path=None))]
fn run(
    py: Python<'_>,
    scenario_json: &str,
    scheduler: &str,
    seed: u64,
    trace_path: Option<&str>,
) -> PyResult<String> {
    let _ = trace_path; // traces are written by Python from run_traced's columns
    py.allow_threads(|| run_job(scenario_json, scheduler, seed))
        .map_err(PyValueError::new_err)
}

#[pyfunction]
#[pyo3(signature = (jobs, threads=0))]
fn run_many(
    py: Python<'_>,
    jobs: Vec<(String, String, u64)>,
    threads: usize,
) -> PyResult<Vec<String>> {
    let go = || -> Vec<String> {
        jobs.par_iter()
            .map(|(sc, sched, seed)| {
                run_job(sc, sched, *seed)
                    .unwrap_or_else(|e| serde_json::json!({ "error": e }).to_string())
            })
            .collect()
    };
    py.allow_threads(|| {
        if threads == 0 {
            Ok(go())
        } else {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map(|pool| pool.install(go))
                .map_err(|e| e.to_string())
        }
    })
    .map_err(PyValueError::new_err)
}

#[pyfunction]
fn run_traced<'py>(
    py: Python<'py>,
    scenario_json: &str,
    scheduler: &str,
    seed: u64,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    let sc = parse(scenario_json)?;
    let (v, tr) = py
        .allow_threads(|| mpsched_sim::run_traced(&sc, scheduler, seed))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = PyDict::new_bound(py);
    d.set_item("time_s", tr.time_s)?;
    let sides: Vec<&str> = tr
        .side
        .iter()
        .map(|s| match s {
            Side::Sender => "sender",
            Side::Receiver => "receiver",
        })
        .collect();
    d.set_item("side", sides)?;
    d.set_item("path", tr.path)?;
    let kinds: Vec<&str> = tr.kind.iter().map(|k| k.as_str()).collect();
    d.set_item("kind", kinds)?;
    d.set_item("dsn", tr.dsn)?;
    d.set_item("len", tr.len)?;
    d.set_item("sample_time_s", tr.sample_time_s)?;
    d.set_item("sample_path", tr.sample_path)?;
    d.set_item("sample_cwnd", tr.sample_cwnd)?;
    d.set_item("sample_srtt_s", tr.sample_srtt_s)?;
    d.set_item("sample_owd_s", tr.sample_owd_s)?;
    // STMS schedulers report their gap (segments); NaN for the others (Shi et al., Fig. 12).
    d.set_item("sample_gap_segs", tr.sample_gap_segs)?;
    Ok((v.to_string(), d))
}

/// A synthetic bandwidth trace (crates/sim/src/tracegen.rs) as mahimahi text.
///
/// `kind`: "constant" (rate_bps), "steps" (rates_bps, step_s; seed given = random order),
/// "random" (mean_bps, stddev_bps, interval_s, seed), "handover" (rate_bps with dips: rate /
/// dip_factor for dip_length_s every dip_every_s) or "outage" (the same with no capacity in the
/// dips). Dips can be added to any kind by giving dip_every_s and dip_length_s.
#[pyfunction]
#[pyo3(signature = (
    kind, duration_s, *, rate_bps=None, rates_bps=None, step_s=None, mean_bps=None,
    stddev_bps=None, interval_s=1.0, seed=None, dip_every_s=None, dip_length_s=None,
    dip_offset_s=None, dip_factor=None
))]
#[allow(clippy::too_many_arguments)]
fn trace_gen(
    py: Python<'_>,
    kind: &str,
    duration_s: f64,
    rate_bps: Option<f64>,
    rates_bps: Option<Vec<f64>>,
    step_s: Option<f64>,
    mean_bps: Option<f64>,
    stddev_bps: Option<f64>,
    interval_s: f64,
    seed: Option<u64>,
    dip_every_s: Option<f64>,
    dip_length_s: Option<f64>,
    dip_offset_s: Option<f64>,
    dip_factor: Option<f64>,
) -> PyResult<String> {
    use mpsched_sim::tracegen::{self, RatePlan};
    let need = |v: Option<f64>, what: &str| {
        v.ok_or_else(|| PyValueError::new_err(format!("trace kind \"{kind}\" needs {what}")))
    };
    let err = |e: tracegen::TraceGenError| PyValueError::new_err(e.to_string());
    let mut plan = match kind {
        "constant" | "handover" | "outage" => {
            RatePlan::constant(need(rate_bps, "a rate")?, duration_s).map_err(err)?
        }
        "steps" => {
            let rates = rates_bps.ok_or_else(|| {
                PyValueError::new_err("trace kind \"steps\" needs a list of rates")
            })?;
            RatePlan::steps(&rates, need(step_s, "a step duration")?, duration_s, seed)
                .map_err(err)?
        }
        "random" => RatePlan::random(
            need(mean_bps, "a mean rate")?,
            need(stddev_bps, "a standard deviation")?,
            duration_s,
            interval_s,
            seed.unwrap_or(0),
        )
        .map_err(err)?,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown trace kind \"{kind}\" (known: constant, steps, random, handover, outage)"
            )))
        }
    };
    let dips = matches!(kind, "handover" | "outage") || dip_every_s.is_some();
    if dips {
        // Cech, TUM 2020, §5: every 15 s, 2 s long, a tenth of the rate.
        let every = dip_every_s.unwrap_or(15.0);
        let factor = match kind {
            "outage" => f64::INFINITY,
            _ => dip_factor.unwrap_or(10.0),
        };
        plan = plan
            .with_dips(
                every,
                dip_length_s.unwrap_or(2.0),
                dip_offset_s.unwrap_or(every),
                factor,
            )
            .map_err(err)?;
    }
    Ok(py.allow_threads(|| plan.to_mahimahi()))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(interrupt, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_many, m)?)?;
    m.add_function(wrap_pyfunction!(run_traced, m)?)?;
    m.add_function(wrap_pyfunction!(trace_gen, m)?)?;
    Ok(())
}
