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
    Ok((v.to_string(), d))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_many, m)?)?;
    m.add_function(wrap_pyfunction!(run_traced, m)?)?;
    Ok(())
}
