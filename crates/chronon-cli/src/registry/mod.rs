//! What a subcommand is given: the public face of a model ([`ModelSpec`] and the types it
//! names), a registered model with its type erased ([`Entry`]), and the program's registered
//! models ([`Models`]). The app (`../app/`) fills it and routes to the subcommands; the
//! subcommands read it; it knows neither.

mod draw;
mod entry;
mod models;
mod spec;

pub use draw::{Draw, Flags};
pub(crate) use entry::Entry;
pub(crate) use models::{program, set_program, Models};
pub use spec::{ModelSpec, RunnableEvent, RunnableState, SimHook};
