//! How a [`BPtr`] crosses a boundary that shared memory does not (MPI ranks): it serializes the
//! item it points to, and deserializing allocates a copy in this thread's shared heap. The item
//! type says how ([`ItemSerde`]): a [`Slice`] by its length, whether it was written, and its
//! elements; any other item by its value's own serde (`impl_item_serde!`).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{local, BPtr, ShmSafe, Slice};

/// How the item a [`BPtr`] points to is written and read back by serde.
pub trait ItemSerde: ShmSafe + Sized {
    /// Writes the item `p` points to.
    fn serialize_item<S: Serializer>(p: &BPtr<Self>, s: S) -> Result<S::Ok, S::Error>;
    /// Reads an item back into a new item of this thread's shared heap.
    fn deserialize_item<'de, D: Deserializer<'de>>(d: D) -> Result<BPtr<Self>, D::Error>;
}

impl<T: ItemSerde> Serialize for BPtr<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        T::serialize_item(self, s)
    }
}

impl<'de, T: ItemSerde> Deserialize<'de> for BPtr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize_item(d)
    }
}

/// A slice's length, and its elements if they were written (an untouched item travels as its
/// length only and arrives untouched).
#[derive(Serialize, Deserialize)]
struct SliceItem<E> {
    len: u64,
    elems: Option<Vec<E>>,
}

impl<T: ShmSafe + Copy + Serialize + DeserializeOwned> ItemSerde for Slice<T> {
    fn serialize_item<S: Serializer>(p: &BPtr<Self>, s: S) -> Result<S::Ok, S::Error> {
        SliceItem {
            len: p.len() as u64,
            elems: p.is_touched().then(|| p.as_slice().to_vec()),
        }
        .serialize(s)
    }

    fn deserialize_item<'de, D: Deserializer<'de>>(d: D) -> Result<BPtr<Self>, D::Error> {
        use serde::de::Error;
        let item = SliceItem::<T>::deserialize(d)?;
        let len = usize::try_from(item.len).map_err(D::Error::custom)?;
        local::with_thread_heap(|h| match &item.elems {
            Some(v) if v.len() == len => h.alloc_slice(v),
            Some(_) => Err(super::HeapError::TooLarge {
                size: len,
                align: 1,
                largest: 0,
            }),
            None => h.alloc_untouched::<T>(len),
        })
        .and_then(|r| r)
        .map_err(|e| D::Error::custom(format!("a shared-heap payload from another rank: {e}")))
    }
}

/// Makes `BPtr<$t>` serialize through `$t`'s own serde (`$t: Serialize + DeserializeOwned +
/// ShmSafe`): the value is written, and read back into a new item of this thread's heap.
#[macro_export]
macro_rules! impl_item_serde {
    ($t:ty) => {
        impl $crate::shm::ItemSerde for $t {
            fn serialize_item<S: ::serde::Serializer>(
                p: &$crate::shm::BPtr<Self>,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                ::serde::Serialize::serialize(&**p, s)
            }
            fn deserialize_item<'de, D: ::serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<$crate::shm::BPtr<Self>, D::Error> {
                let v: $t = ::serde::Deserialize::deserialize(d)?;
                $crate::shm::BPtr::new(v).map_err(|e| {
                    <D::Error as ::serde::de::Error>::custom(format!(
                        "a shared-heap payload from another rank: {e}"
                    ))
                })
            }
        }
    };
}
