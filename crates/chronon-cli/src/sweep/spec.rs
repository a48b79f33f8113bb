//! What a sweep is made of: the run flags as the user gave them, with lists (`0.5,0.7,0.9`)
//! and ranges (`256..4096*2`) expanded into the points of the study (their cartesian product),
//! and the seed of each replication.

use crate::Failure;

/// The most values one list or range may expand to, and the most points a study may have.
pub(crate) const MAX_VALUES: usize = 10_000;

/// Flags whose value is one thing even with commas or dots in it (never a list or a range).
const WHOLE_VALUES: &[&str] = &["heap-classes", "config"];

/// Flags a sweep sets itself or cannot pass to its runs, and why.
const REFUSED: &[(&str, &str)] = &[
    ("output", "the sweep writes each run's report under --out DIR/runs/"),
    ("gvt-csv", "every run would write the same file"),
    (
        "ranks",
        "each run of a sweep is one process; start the sweep itself under mpirun to spread its runs over ranks",
    ),
];

/// One flag of the runs: its name (without `--`) and its values (one unless swept; none for a
/// flag given without a value, such as `--check-reverse`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Flag {
    pub name: String,
    pub values: Vec<String>,
    /// Whether the flag was given with a value.
    pub valued: bool,
}

impl Flag {
    /// Whether the study varies this flag.
    pub(crate) fn swept(&self) -> bool {
        self.values.len() > 1
    }

    /// The flag's name in the study's tables and plots: its name, or for a model parameter
    /// (`--param rate=0.5,rate=0.7`, a model written in Python) the parameter's (`rate`).
    pub(crate) fn label(&self) -> &str {
        match self.param_name() {
            Some(n) => n,
            None => &self.name,
        }
    }

    /// A value as the study's tables show it: a parameter's without its name (`0.5`).
    pub(crate) fn shown<'v>(&self, value: &'v str) -> &'v str {
        match self.param_name() {
            Some(_) => value.split_once('=').map_or(value, |(_, v)| v.trim()),
            None => value,
        }
    }

    /// The parameter a `--param` flag sets (every value names the same one: `parse` checks).
    fn param_name(&self) -> Option<&str> {
        if self.name != "param" {
            return None;
        }
        self.values.first()?.split_once('=').map(|(n, _)| n.trim())
    }
}

/// The flags of a study's runs, in the order given.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    pub flags: Vec<Flag>,
}

/// One point of the study: the value of each swept flag.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Point {
    /// (flag name, value) of every swept flag, in the order the flags were given.
    pub params: Vec<(String, String)>,
    /// The run flags of this point (without the seed, which is per replication).
    pub args: Vec<String>,
    /// The seed the replications of this point derive from (`--seed`, default 1).
    pub seed: u64,
}

impl Spec {
    /// Reads the run flags (`--name value`, `--name=value`, or a bare `--name`).
    pub(crate) fn parse(tokens: &[String]) -> Result<Spec, Failure> {
        let mut flags: Vec<Flag> = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let t = &tokens[i];
            let Some(body) = t.strip_prefix("--").filter(|b| !b.is_empty()) else {
                return Err(Failure::bad_input(format!(
                    "unexpected '{t}': give the run options as --name value"
                )));
            };
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => {
                    let next = tokens.get(i + 1).filter(|n| !is_flag(n));
                    if next.is_some() {
                        i += 1;
                    }
                    (body.to_string(), next.cloned())
                }
            };
            i += 1;
            if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
                return Err(Failure::bad_input(format!(
                    "--{name} is not a sweep option: {why}"
                )));
            }
            if flags.iter().any(|f| f.name == name) && name != "param" {
                return Err(Failure::bad_input(format!("--{name} is given twice")));
            }
            let flag = match value {
                None => Flag {
                    name,
                    values: Vec::new(),
                    valued: false,
                },
                Some(v) => Flag {
                    values: if WHOLE_VALUES.contains(&name.as_str()) {
                        vec![v]
                    } else {
                        expand(&name, &v)?
                    },
                    name,
                    valued: true,
                },
            };
            if flag.name == "param" {
                check_param(&flag, &flags)?;
            }
            flags.push(flag);
        }
        let spec = Spec { flags };
        let points = spec
            .flags
            .iter()
            .try_fold(1usize, |n, f| n.checked_mul(f.values.len().max(1)));
        if points.is_none_or(|n| n > MAX_VALUES) {
            return Err(Failure::bad_input(format!(
                "the study has more than {MAX_VALUES} points; sweep fewer values at once"
            )));
        }
        Ok(spec)
    }

    /// The swept flags' names.
    pub(crate) fn swept(&self) -> Vec<&str> {
        self.flags
            .iter()
            .filter(|f| f.swept())
            .map(|f| f.label())
            .collect()
    }

    /// Every point, the last swept flag varying fastest.
    pub(crate) fn points(&self) -> Result<Vec<Point>, Failure> {
        let mut points = vec![Vec::<(usize, &str)>::new()];
        for (fi, f) in self.flags.iter().enumerate() {
            if f.values.is_empty() {
                continue;
            }
            points = points
                .into_iter()
                .flat_map(|p| {
                    f.values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((fi, v.as_str()));
                        q
                    })
                })
                .collect();
        }
        points
            .into_iter()
            .map(|chosen| {
                let value = |fi: usize| chosen.iter().find(|(i, _)| *i == fi).map(|(_, v)| *v);
                let mut args = Vec::new();
                let mut params = Vec::new();
                let mut seed = 1;
                for (fi, f) in self.flags.iter().enumerate() {
                    match value(fi) {
                        None => args.push(format!("--{}", f.name)),
                        Some(v) => {
                            if f.name == "seed" {
                                seed = v.parse().map_err(|_| {
                                    Failure::bad_input(format!(
                                        "--seed: '{v}' is not a whole number from 0 to {}",
                                        u64::MAX
                                    ))
                                })?;
                                // The seed goes to each run as its replication's seed.
                            } else {
                                args.push(format!("--{}", f.name));
                                args.push(v.to_string());
                            }
                            if f.swept() {
                                params.push((f.label().to_string(), f.shown(v).to_string()));
                            }
                        }
                    }
                }
                Ok(Point { params, args, seed })
            })
            .collect()
    }
}

/// A `--param` flag (a model parameter, `NAME=VALUE` each value, one axis of the study): every
/// value names one parameter, and no earlier `--param` names it (several `--param` flags, each
/// its own parameter, make the cross product of their values).
fn check_param(flag: &Flag, earlier: &[Flag]) -> Result<(), Failure> {
    let names: Vec<Option<&str>> = flag
        .values
        .iter()
        .map(|v| v.split_once('=').map(|(n, _)| n.trim()))
        .collect();
    let Some(Some(first)) = names.first().copied() else {
        return Err(Failure::bad_input(
            "--param: give NAME=VALUE (a list: rate=0.5,rate=0.7)",
        ));
    };
    if names.iter().any(|n| *n != Some(first)) {
        return Err(Failure::bad_input(format!(
            "--param {}: one parameter per --param (every value NAME=VALUE with the same NAME); give another --param for another parameter",
            flag.values.join(",")
        )));
    }
    if earlier.iter().any(|f| f.param_name() == Some(first)) {
        return Err(Failure::bad_input(format!(
            "--param {first} is given twice"
        )));
    }
    Ok(())
}

/// Whether a token is a flag (and not a value such as `-1` or `-0.5`).
fn is_flag(t: &str) -> bool {
    t.starts_with("--") && t.len() > 2
}

/// The values of one flag's value: a list `a,b,c`, a range `A..B`, `A..B+S` or `A..B*F`, or one
/// value.
pub(crate) fn expand(name: &str, value: &str) -> Result<Vec<String>, Failure> {
    if value.contains(',') {
        let items: Vec<&str> = value.split(',').map(str::trim).collect();
        if items.iter().any(|i| i.is_empty()) {
            return Err(Failure::bad_input(format!(
                "--{name} '{value}': a list has an empty item"
            )));
        }
        let mut out = Vec::new();
        for item in items {
            out.extend(expand(name, item)?);
            if out.len() > MAX_VALUES {
                return Err(too_many(name, value));
            }
        }
        return Ok(out);
    }
    match parse_range(value) {
        Some(range) => range_values(name, value, range),
        None => Ok(vec![value.to_string()]),
    }
}

/// A range's parts: start, end, and the step (`+S`) or factor (`*F`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Add(f64),
    Mul(f64),
}

struct Range<'a> {
    start: (&'a str, f64),
    end: (&'a str, f64),
    step: (&'a str, Step),
}

fn parse_range(value: &str) -> Option<Range<'_>> {
    let (a, rest) = value.split_once("..")?;
    let (b, step) = match rest.find(['+', '*']) {
        // A '+' right after an exponent's 'e' is the exponent's sign, not a step.
        Some(k) if k > 0 && !rest[..k].ends_with(['e', 'E']) => {
            let s = &rest[k + 1..];
            let x: f64 = s.trim().parse().ok()?;
            (
                &rest[..k],
                (
                    s,
                    if rest.as_bytes()[k] == b'+' {
                        Step::Add(x)
                    } else {
                        Step::Mul(x)
                    },
                ),
            )
        }
        _ => (rest, ("1", Step::Add(1.0))),
    };
    let start: f64 = a.trim().parse().ok()?;
    let end: f64 = b.trim().parse().ok()?;
    Some(Range {
        start: (a, start),
        end: (b, end),
        step,
    })
}

fn too_many(name: &str, value: &str) -> Failure {
    Failure::bad_input(format!(
        "--{name} '{value}' has more than {MAX_VALUES} values"
    ))
}

fn range_values(name: &str, value: &str, r: Range<'_>) -> Result<Vec<String>, Failure> {
    let (a, b) = (r.start.1, r.end.1);
    let never = |why: &str| {
        Failure::bad_input(format!(
            "--{name} '{value}': the range never ends ({why}); write A..B, A..B+STEP (STEP > 0) or A..B*FACTOR (FACTOR > 1)"
        ))
    };
    if !a.is_finite() || !b.is_finite() {
        return Err(never("an end is not finite"));
    }
    let integral = |s: &str| !s.contains(['.', 'e', 'E']) && s.trim().parse::<i64>().is_ok();
    let ints = integral(r.start.0) && integral(r.end.0) && integral(r.step.0);
    let up = b >= a;
    // The end counts as reached within a relative 1e-9 (decimal steps are not exact in binary).
    let slack = 1e-9 * a.abs().max(b.abs()).max(1.0);
    let within = |x: f64| if up { x <= b + slack } else { x >= b - slack };
    match r.step.1 {
        Step::Add(s) if !(s > 0.0 && s.is_finite()) => {
            return Err(never("the step must be > 0"));
        }
        Step::Mul(f) if !(f > 1.0 && f.is_finite()) => {
            return Err(never("the factor must be > 1"));
        }
        Step::Mul(_) if !(a > 0.0 && b > 0.0) => {
            return Err(never("a geometric range needs both ends > 0"));
        }
        _ => {}
    }
    // The k-th value of the range.
    let at = |k: i32| match (r.step.1, up) {
        (Step::Add(s), true) => a + f64::from(k) * s,
        (Step::Add(s), false) => a - f64::from(k) * s,
        (Step::Mul(f), true) => a * f.powi(k),
        (Step::Mul(f), false) => a / f.powi(k),
    };
    let mut out = Vec::new();
    for k in 0.. {
        let x = at(k);
        if !within(x) {
            break;
        }
        if out.len() == MAX_VALUES {
            return Err(too_many(name, value));
        }
        out.push(show(x, ints));
    }
    Ok(out)
}

/// A range's value as a flag value: a whole number when the range is written in whole
/// numbers, else the shortest decimal that 12 significant digits give (0.1 + 2 * 0.1 is 0.3).
fn show(x: f64, integral: bool) -> String {
    if integral {
        return format!("{}", x.round() as i64);
    }
    let s = format!("{:.*e}", 11, x);
    let v: f64 = s.parse().unwrap_or(x);
    format!("{v}")
}

/// The seed of replication `r` of a point whose seed is `base`: replication 0 runs with the
/// point's own seed (so a one-replication sweep reruns `chronon run ... --seed S` exactly);
/// the others with [`LpRng::derive_seed`](chronon::LpRng::derive_seed), distinct for distinct
/// `r`.
pub(crate) fn replication_seed(base: u64, r: u64) -> u64 {
    if r == 0 {
        base
    } else {
        chronon::LpRng::derive_seed(base, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn values(v: &str) -> Vec<String> {
        expand("x", v).unwrap()
    }

    #[test]
    fn lists_and_ranges_expand() {
        assert_eq!(values("0.5,0.7,0.9"), ["0.5", "0.7", "0.9"]);
        assert_eq!(
            values("256..4096*2"),
            ["256", "512", "1024", "2048", "4096"]
        );
        assert_eq!(values("1..4"), ["1", "2", "3", "4"]);
        assert_eq!(values("0.1..0.5+0.1"), ["0.1", "0.2", "0.3", "0.4", "0.5"]);
        assert_eq!(values("10..1+3"), ["10", "7", "4", "1"]);
        assert_eq!(values("4096..1000*2"), ["4096", "2048", "1024"]);
        assert_eq!(values("1,5..7"), ["1", "5", "6", "7"]);
        assert_eq!(values("1e-3..1e-2*10"), ["0.001", "0.01"]);
        assert_eq!(values("abc"), ["abc"]);
        assert_eq!(values("-1"), ["-1"]);
        assert_eq!(values("../x.toml"), ["../x.toml"]);
    }

    #[test]
    fn bad_lists_and_ranges_are_refused() {
        for (v, want) in [
            ("0.5,,0.7", "empty item"),
            ("0.5,", "empty item"),
            ("1..10+0", "never ends"),
            ("1..10+-1", "never ends"),
            ("1..10*1", "never ends"),
            ("0..10*2", "never ends"),
            ("1..inf", "never ends"),
            ("1..100000", "more than"),
        ] {
            let e = expand("load", v).unwrap_err();
            assert!(e.message.contains(want), "{v}: {}", e.message);
            assert!(e.message.contains("--load"), "{}", e.message);
        }
    }

    #[test]
    fn several_params_are_axes_of_their_own() {
        let spec = Spec::parse(&toks(
            "--param rate=0.5,rate=0.7 --param servers=1,servers=2 --end 9",
        ))
        .unwrap();
        assert_eq!(spec.swept(), ["rate", "servers"]);
        let p = spec.points().unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(
            p[1].params,
            [
                ("rate".into(), "0.5".into()),
                ("servers".into(), "2".into())
            ]
        );
        assert_eq!(
            p[2].args,
            toks("--param rate=0.7 --param servers=1 --end 9")
        );
        for (bad, want) in [
            ("--param rate=1 --param rate=2", "given twice"),
            ("--param rate=1,servers=2", "one parameter per --param"),
            ("--param 5", "NAME=VALUE"),
        ] {
            let e = Spec::parse(&toks(bad)).unwrap_err();
            assert!(e.message.contains(want), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn points_are_the_product_with_the_last_flag_fastest() {
        let spec =
            Spec::parse(&toks("--lps 2,4 --end 10 --remote 0.1,0.2 --check-reverse")).unwrap();
        assert_eq!(spec.swept(), ["lps", "remote"]);
        let p = spec.points().unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(
            p[1].args,
            toks("--lps 2 --end 10 --remote 0.2 --check-reverse")
        );
        assert_eq!(
            p[2].params,
            [("lps".into(), "4".into()), ("remote".into(), "0.1".into())]
        );
    }

    #[test]
    fn the_seed_is_the_replications_base_and_may_be_swept() {
        let spec = Spec::parse(&toks("--seed=5,6 --lps 3")).unwrap();
        let p = spec.points().unwrap();
        assert_eq!((p[0].seed, p[1].seed), (5, 6));
        assert_eq!(p[0].args, toks("--lps 3"));
        assert_eq!(
            Spec::parse(&toks("--lps 3")).unwrap().points().unwrap()[0].seed,
            1
        );
        assert!(Spec::parse(&toks("--seed x")).unwrap().points().is_err());
    }

    #[test]
    fn refused_and_repeated_flags() {
        for (args, want) in [
            ("--output x.json", "--output is not a sweep option"),
            ("--ranks 2", "--ranks is not a sweep option"),
            ("--lps 2 --lps 3", "given twice"),
            ("phold", "unexpected 'phold'"),
            ("--a 1..100 --b 1..101", "more than"),
        ] {
            let e = Spec::parse(&toks(args)).unwrap_err();
            assert!(e.message.contains(want), "{args}: {}", e.message);
        }
        // Heap classes keep their commas.
        let s = Spec::parse(&toks("--heap-classes 64:8,512:4")).unwrap();
        assert_eq!(s.flags[0].values, ["64:8,512:4"]);
    }

    #[test]
    fn replication_seeds_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for base in 0..50u64 {
            for r in 0..200u64 {
                seen.insert(replication_seed(base, r));
            }
        }
        assert_eq!(seen.len(), 50 * 200);
        assert_eq!(replication_seed(7, 0), 7);
        // The derivation docs/sweep.md states: SplitMix64's output of 1 + 1 * gamma.
        assert_eq!(replication_seed(1, 1), 10_451_216_379_200_822_465);
    }
}
