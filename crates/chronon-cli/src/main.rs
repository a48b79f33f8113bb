//! `chronon`: run, check and study the shipped models; benchmark the engine.

fn main() -> std::process::ExitCode {
    chronon_cli::App::new("chronon")
        .about("chronon: a parallel discrete event simulation engine.")
        .builtins()
        .engine_tools()
        .run()
}
