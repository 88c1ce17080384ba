//! Plans and command lines checked as far as they go before anything
//! runs (`ampbench check`, the fuzz targets).

use anyhow::Result;

use crate::UsageError;
use crate::runner::RunConfig;

/// Checks a plan file as `ampbench run PLAN` would, without running it.
pub fn check_plan(path: &std::path::Path) -> Result<Vec<RunConfig>> {
    use clap::Parser;
    let cli =
        crate::cli::Cli::try_parse_from(["ampbench", "run", path.to_str().unwrap_or_default()])
            .map_err(|e| UsageError(e.to_string()))?;
    let crate::cli::Cmd::Run(args) = cli.cmd else {
        return Err(UsageError("not a run".into()).into());
    };
    let cfgs = (*args).into_configs()?;
    for cfg in &cfgs {
        let params =
            crate::workload::Params::new(cfg.workload.name(), cfg.workload.params(), &cfg.params)?;
        cfg.workload.build(&params)?;
        for (k, o) in &cfg.sets {
            crate::engine::validate_options(*k, o)?;
        }
    }
    Ok(cfgs)
}

/// Checks a command line of `run` or `crashcheck` (`argv` after the
/// program's name) as far as it goes before anything starts: parsed,
/// validated, and for a run each engine's options, the workload built
/// and every step's timings made as the runner makes them. The fuzz
/// target `args` feeds it.
pub fn check_args(argv: &[String]) -> Result<()> {
    use clap::Parser;
    let cli = crate::cli::Cli::try_parse_from(
        std::iter::once("ampbench".to_string()).chain(argv.iter().cloned()),
    )
    .map_err(|e| UsageError(e.to_string().lines().next().unwrap_or_default().to_string()))?;
    match cli.cmd {
        crate::cli::Cmd::Run(args) => {
            for cfg in (*args).into_configs()? {
                let params = crate::workload::Params::new(
                    cfg.workload.name(),
                    cfg.workload.params(),
                    &cfg.params,
                )?;
                cfg.workload.build(&params)?;
                for (k, o) in &cfg.sets {
                    crate::engine::validate_options(*k, o)?;
                }
                let levels: Vec<Option<usize>> = if cfg.thread_levels.is_empty() {
                    vec![None]
                } else {
                    cfg.thread_levels.iter().map(|&n| Some(n)).collect()
                };
                for si in 0..cfg.steps.len() {
                    for &l in &levels {
                        crate::runner::step_ctx(&cfg, si, l, 0)?;
                    }
                }
            }
            Ok(())
        }
        crate::cli::Cmd::Crashcheck(args) => crate::crashcheck::check_args(args),
        _ => Err(UsageError("only run and crashcheck are checked".into()).into()),
    }
}
