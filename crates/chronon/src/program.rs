//! How this program is started again: the worker processes of a `--procs` run, and the tools
//! that run a program's own command lines (`check`, `sweep`), re-execute it.
//!
//! By default that is this executable ([`std::env::current_exe`]) with this process's command
//! line. A program hosted by an interpreter sets its own with [`set_program`] once, before any
//! run: the Python package is started as `python -m chronon_pdes ARGS`, where the executable
//! alone (the interpreter, resolved past a virtual environment's link) would not find the
//! package.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::sync::OnceLock;

/// A command that starts this program again.
#[derive(Clone, Debug)]
pub struct Program {
    /// The executable.
    pub exe: PathBuf,
    /// Arguments that come before a command line of the program (e.g. `-m chronon_pdes`).
    pub prefix: Vec<OsString>,
    /// This process's command line after the program and its prefix.
    pub args: Vec<OsString>,
}

static PROGRAM: OnceLock<Program> = OnceLock::new();

/// Sets how this program is started again, once per process; a second call is refused (the
/// program it names is returned).
pub fn set_program(program: Program) -> Result<(), Program> {
    PROGRAM.set(program)
}

/// The executable and the arguments before a command line that start this program again.
pub fn program() -> io::Result<(PathBuf, Vec<OsString>)> {
    match PROGRAM.get() {
        Some(p) => Ok((p.exe.clone(), p.prefix.clone())),
        None => Ok((std::env::current_exe()?, Vec::new())),
    }
}

/// This process's command line after the program (and its prefix).
pub fn program_args() -> Vec<OsString> {
    match PROGRAM.get() {
        Some(p) => p.args.clone(),
        None => std::env::args_os().skip(1).collect(),
    }
}
