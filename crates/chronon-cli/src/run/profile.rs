//! LP-cost profiles: `--lp-costs FILE` (and `--output DIR/`'s `lp-costs.csv`) writes what each
//! LP cost in a run; `--mapping profile:FILE` maps the next run's LPs from it in contiguous
//! blocks of about equal cost (`chronon::partition::Mapping::Costs`), the idea warped2 takes
//! from an earlier run's profile.
//!
//! The file is CSV under one header line naming the model and its LP count:
//!
//! ```text
//! # chronon lp-costs model=phold lps=1024
//! lp,events,ns
//! 0,2011,390144
//! ```
//!
//! `ns` is the LP's handler time in nanoseconds, estimated from one event in 128
//! (`chronon::lp_cost`).

use std::path::Path;

use chronon::lp_cost::LpCost;

use crate::Failure;

const HEADER: &str = "# chronon lp-costs";
const COLUMNS: &str = "lp,events,ns";

/// The profile of a run of `model` whose LPs cost `costs`.
pub(super) fn text(model: &str, costs: &[LpCost]) -> String {
    let mut s = format!("{HEADER} model={model} lps={}\n{COLUMNS}\n", costs.len());
    for (lp, c) in costs.iter().enumerate() {
        s += &format!("{lp},{},{}\n", c.events, c.ns);
    }
    s
}

/// A profile read back: its model, and per LP its cost in nanoseconds.
#[derive(Debug, PartialEq)]
pub(crate) struct Profile {
    pub model: String,
    pub ns: Vec<u64>,
}

/// Reads the profile in `path`; the error is one line naming the file and what is wrong.
pub(crate) fn read(path: &Path) -> Result<Profile, Failure> {
    let at = format!("--mapping profile:{}", path.display());
    let bad = |what: String| Failure::bad_input(format!("{at}: {what}"));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    parse(&text).map_err(bad)
}

fn parse(text: &str) -> Result<Profile, String> {
    let mut lines = text.lines().enumerate();
    let not_ours = || {
        format!("not an LP-cost profile (it must begin with `{HEADER} model=NAME lps=N`, as --lp-costs writes)")
    };
    let (_, head) = lines.next().ok_or_else(not_ours)?;
    let rest = head.strip_prefix(HEADER).ok_or_else(not_ours)?;
    let field = |k: &str| {
        rest.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .map(str::to_string)
    };
    let (Some(model), Some(lps)) = (field("model="), field("lps=")) else {
        return Err(not_ours());
    };
    let lps: usize = lps.parse().map_err(|_| not_ours())?;
    match lines.next() {
        Some((_, c)) if c.trim() == COLUMNS => {}
        _ => return Err(format!("line 2 must be `{COLUMNS}`")),
    }
    let mut ns = vec![None; lps];
    for (i, line) in lines {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "line {} is `{line}`, not `lp,events,ns` with LP < {lps}",
                i + 1
            )
        };
        let f: Vec<&str> = line.split(',').collect();
        let [lp, events, cost] = f[..] else {
            return Err(bad());
        };
        let (Ok(lp), Ok(_), Ok(cost)) = (
            lp.trim().parse::<usize>(),
            events.trim().parse::<u64>(),
            cost.trim().parse::<u64>(),
        ) else {
            return Err(bad());
        };
        let slot = ns.get_mut(lp).ok_or_else(bad)?;
        if slot.replace(cost).is_some() {
            return Err(format!("line {} gives LP {lp} a second time", i + 1));
        }
    }
    let ns = ns
        .into_iter()
        .enumerate()
        .map(|(lp, c)| c.ok_or_else(|| format!("LP {lp} is missing (the header says {lps} LPs)")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Profile { model, ns })
}

/// A profile mapping for a model without a topology (`has_topology` false): LPs dealt in turn
/// by cost (`Mapping::CostsSpread`) rather than contiguous blocks.
pub(super) fn spread_without_topology(
    mut executor: chronon::Executor,
    has_topology: bool,
) -> chronon::Executor {
    use chronon::partition::Mapping;
    use chronon::Executor;
    let mapping = match &mut executor {
        Executor::Window(c) | Executor::NullMessage(c) | Executor::Lockstep(c) => &mut c.mapping,
        Executor::TimeWarp(c) => &mut c.mapping,
        _ => return executor,
    };
    if let (Mapping::Costs(c), false) = (&*mapping, has_topology) {
        *mapping = Mapping::CostsSpread(c.clone());
    }
    executor
}

/// Checks that a profile mapping is of model `name` and, where the model says its LP count,
/// of `lps` LPs.
pub(super) fn check_model(
    mapping: Option<&crate::choices::MappingArg>,
    name: &str,
    lps: Option<u32>,
) -> Result<(), Failure> {
    let Some(crate::choices::MappingArg::Profile(path)) = mapping else {
        return Ok(());
    };
    let p = read(path)?;
    let at = format!("--mapping profile:{}", path.display());
    if p.model != name {
        return Err(Failure::bad_input(format!(
            "{at}: a profile of the model {}, not {name}",
            p.model
        )));
    }
    match lps {
        Some(n) if n as usize != p.ns.len() => Err(Failure::bad_input(format!(
            "{at}: a profile of {} LPs; this run has {n}",
            p.ns.len()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_reads_back_what_was_written() {
        let costs = [
            LpCost { events: 3, ns: 90 },
            LpCost { events: 0, ns: 0 },
            LpCost { events: 7, ns: 12 },
        ];
        let p = parse(&text("phold", &costs)).unwrap();
        assert_eq!(p.model, "phold");
        assert_eq!(p.ns, vec![90, 0, 12]);
    }

    #[test]
    fn a_bad_profile_gets_one_line_naming_the_problem() {
        let bad = |t: &str, what: &str| {
            let e = parse(t).unwrap_err();
            assert!(e.contains(what), "{e}");
            assert!(!e.contains('\n'));
        };
        bad("", "not an LP-cost profile");
        bad("lp,events,ns\n0,1,2\n", "not an LP-cost profile");
        bad(
            "# chronon lp-costs model=x lps=two\n",
            "not an LP-cost profile",
        );
        bad(
            "# chronon lp-costs model=x lps=2\n0,1,2\n",
            "line 2 must be",
        );
        let h = "# chronon lp-costs model=x lps=2\nlp,events,ns\n";
        bad(&format!("{h}0,1,2\n"), "LP 1 is missing");
        bad(&format!("{h}0,1,2\n1,1\n"), "line 4");
        bad(&format!("{h}0,1,2\n2,1,1\n"), "LP < 2");
        bad(&format!("{h}0,1,2\n1,x,1\n"), "line 4");
        bad(&format!("{h}0,1,2\n0,1,2\n"), "second time");
        assert_eq!(
            parse(&format!("{h}1,1,5\n0,1,2\n\n")).unwrap().ns,
            vec![2, 5]
        );
    }
}
