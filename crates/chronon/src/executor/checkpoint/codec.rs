//! How a model's states and events become bytes: serde (bincode) through function pointers
//! made where the model's types are known to serialize, so that the `Model` trait itself asks
//! nothing of a model that never saves a checkpoint.

use std::any::Any;
use std::io::Write;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::model::Model;

/// A model's state and event codecs.
pub(crate) struct Codec<M: Model> {
    pub state_to: fn(&M::State, &mut Vec<u8>) -> Result<(), String>,
    pub state_from: fn(&[u8]) -> Result<M::State, String>,
    pub event_to: fn(&M::Event, &mut Vec<u8>) -> Result<(), String>,
    pub event_from: fn(&[u8]) -> Result<M::Event, String>,
}

impl<M: Model> Clone for Codec<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M: Model> Copy for Codec<M> {}

fn to<T: Serialize>(v: &T, out: &mut Vec<u8>) -> Result<(), String> {
    bincode::serialize_into(out.by_ref(), v).map_err(|e| e.to_string())
}

fn from<T: DeserializeOwned>(b: &[u8]) -> Result<T, String> {
    bincode::deserialize(b).map_err(|e| e.to_string())
}

impl<M: Model> Codec<M>
where
    M::State: Serialize + DeserializeOwned,
    M::Event: Serialize + DeserializeOwned,
{
    /// The serde codec of `M`.
    pub(crate) fn serde() -> Self {
        Codec {
            state_to: to::<M::State>,
            state_from: from::<M::State>,
            event_to: to::<M::Event>,
            event_from: from::<M::Event>,
        }
    }
}

/// A codec with its model type erased (it travels in the non-generic `RunConfig`).
pub(crate) type AnyCodec = std::sync::Arc<dyn Any + Send + Sync>;

impl<M: Model> Codec<M> {
    /// Erases the model type.
    pub(crate) fn erase(self) -> AnyCodec {
        std::sync::Arc::new(self)
    }

    /// The codec of `M` in `any` (made by [`Codec::erase`] for the same `M`).
    pub(crate) fn of(any: &(dyn Any + Send + Sync)) -> &Self {
        any.downcast_ref::<Self>()
            .expect("a run's checkpoint codec is made for its own model type")
    }
}
