//! How a [`BPtr`] crosses a boundary that shared memory does not (MPI ranks): it serializes the
//! item it points to, and deserializing allocates a copy in this thread's shared heap. The item
//! type says how ([`ItemSerde`]): a [`Slice`] by its length, whether it was written, and its
//! elements; any other item by its value's own serde (`impl_item_serde!`).

use std::any::{Any, TypeId};

use serde::de::{DeserializeOwned, SeqAccess, Visitor};
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
#[serde(bound(
    serialize = "E: Serialize + 'static",
    deserialize = "E: DeserializeOwned + 'static"
))]
struct SliceItem<E> {
    len: u64,
    elems: Option<Elems<E>>,
}

/// A slice's elements on the wire. Bytes (`E = u8`, e.g. packet bodies) go as one byte block:
/// serde's `Vec<u8>` reads them one call per byte (in a debug build a rank receiving
/// star-clique's packets spent most of its time there, and its records piled up), a block
/// is one copy. bincode writes a block and a `Vec<u8>` alike (length, then the bytes).
struct Elems<E>(Vec<E>);

impl<E: Serialize + 'static> Serialize for Elems<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (&self.0 as &dyn Any).downcast_ref::<Vec<u8>>() {
            Some(bytes) => s.serialize_bytes(bytes),
            None => self.0.serialize(s),
        }
    }
}

impl<'de, E: DeserializeOwned + 'static> Deserialize<'de> for Elems<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if TypeId::of::<E>() != TypeId::of::<u8>() {
            return Vec::<E>::deserialize(d).map(Elems);
        }
        let bytes: Box<dyn Any> = Box::new(d.deserialize_byte_buf(Bytes)?);
        match bytes.downcast::<Vec<E>>() {
            Ok(v) => Ok(Elems(*v)),
            Err(_) => unreachable!("E is u8"),
        }
    }
}

/// Reads a byte block (or, from a format that writes bytes as a sequence, that sequence).
struct Bytes;

impl<'de> Visitor<'de> for Bytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bytes")
    }

    fn visit_bytes<Er: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, Er> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<Er: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, Er> {
        Ok(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element()? {
            v.push(b);
        }
        Ok(v)
    }
}

impl<T: ShmSafe + Copy + Serialize + DeserializeOwned> ItemSerde for Slice<T> {
    fn serialize_item<S: Serializer>(p: &BPtr<Self>, s: S) -> Result<S::Ok, S::Error> {
        SliceItem {
            len: p.len() as u64,
            elems: p.is_touched().then(|| Elems(p.as_slice().to_vec())),
        }
        .serialize(s)
    }

    fn deserialize_item<'de, D: Deserializer<'de>>(d: D) -> Result<BPtr<Self>, D::Error> {
        use serde::de::Error;
        let item = SliceItem::<T>::deserialize(d)?;
        let len = usize::try_from(item.len).map_err(D::Error::custom)?;
        local::with_thread_heap(|h| match item.elems.as_ref().map(|e| &e.0) {
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

#[cfg(all(test, feature = "mpi"))]
mod tests {
    use super::*;

    #[test]
    fn byte_slices_travel_as_one_block_and_other_slices_as_sequences() {
        let bytes: Vec<u8> = (0..=255).collect();
        let p = local::with_thread_heap(|h| h.alloc_slice(&bytes))
            .unwrap()
            .unwrap();
        let wire = bincode::serialize(&p).unwrap();
        // The same bytes as a `Vec<u8>` field would give: length, touched, length, bytes.
        let as_vec = bincode::serialize(&(256u64, Some(bytes.clone()))).unwrap();
        assert_eq!(wire, as_vec);
        let back: BPtr<Slice<u8>> = bincode::deserialize(&wire).unwrap();
        assert_eq!(back.as_slice(), &bytes[..]);

        let words: Vec<u32> = vec![7, 1 << 20, u32::MAX];
        let q = local::with_thread_heap(|h| h.alloc_slice(&words))
            .unwrap()
            .unwrap();
        let back: BPtr<Slice<u32>> =
            bincode::deserialize(&bincode::serialize(&q).unwrap()).unwrap();
        assert_eq!(back.as_slice(), &words[..]);
        // A block cut short is an error, not a panic.
        assert!(bincode::deserialize::<BPtr<Slice<u8>>>(&wire[..wire.len() - 1]).is_err());
    }
}
