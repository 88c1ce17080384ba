//! Every step of one engine run, in order, at each storage class and
//! thread level of the sweeps (see `run_engine`).

use super::*;

/// Every step of an engine run, in order (see [`run_engine`]); `after`
/// is how the last ended, `ran` how many ran.
pub(super) fn run_steps(
    r: &mut Run<'_>,
    side: &mut dyn EngineSide,
    mem: &EngineMem,
    (after, ran): (&mut After, &mut usize),
    out: &mut dyn Write,
) -> Result<()> {
    let cfg = r.cfg;
    'steps: for (si, step) in r.steps.clone().into_iter().enumerate() {
        if cfg.drop_caches && si > 0 {
            if let Err(e) = setup::drop_caches() {
                writeln!(out, "  cannot drop caches: {e}")?;
            }
        }
        // A storage sweep runs repeatable steps at every class; the load
        // (and an index build) at the first.
        let classes: Vec<Option<usize>> = if step.repeatable() && !r.storage.sweep.is_empty() {
            (0..r.storage.sweep.len()).map(Some).collect()
        } else {
            vec![None]
        };
        let levels: Vec<Option<usize>> = if step.concurrent() && !cfg.thread_levels.is_empty() {
            cfg.thread_levels.iter().map(|&n| Some(n)).collect()
        } else {
            vec![None]
        };
        // Each pass of the step on this database draws its own stream.
        let mut pass = 0;
        for class in classes {
            if !r.storage.sweep.is_empty() {
                throttle_to(r, mem, class.unwrap_or(0))?;
            }
            for &level in &levels {
                let mut at = Level {
                    class: class.map(|i| r.storage.sweep[i].0),
                    threads: level,
                    pass,
                };
                // --reuse: a step that reads or rewrites the data runs
                // --repeat times in a row; a load runs once.
                let reps = if cfg.reuse && step.repeatable() {
                    cfg.repeat
                } else {
                    1
                };
                for rep in 0..reps {
                    if cfg.reuse {
                        r.rep = rep;
                    }
                    at.pass = pass;
                    pass += 1;
                    out.flush()?;
                    *ran += 1;
                    *after = side.step(r, mem, (si, step, at), out)?;
                    // A device model that died or erred makes every later
                    // figure wrong: the run stops, saying why (run's loop).
                    if r.storage.model_failure().is_some() {
                        *after = After::Failed;
                        break 'steps;
                    }
                    if !matches!(*after, After::Next) {
                        break 'steps;
                    }
                }
            }
        }
    }
    Ok(())
}
