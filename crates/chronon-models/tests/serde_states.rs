//! Every model's LP state and event serialize (a checkpoint saves them): each `State` and
//! `Event` implements `Serialize + DeserializeOwned`, and representative values survive a
//! JSON round trip, shared-heap payloads included. States with private fields are checked
//! with populated values by the unit tests in their model's file.

use chronon::measure::{Histogram, Tally, TimeAverage};
use chronon::shm::{with_thread_heap, BPtr, Bytes, Slice};
use chronon::Model;
use chronon_models::datastore::{Node, StoreEvent};
use chronon_models::faulty::Faulty;
use chronon_models::manufacturing::Flow;
use chronon_models::net::{
    Body, LocalPayload, NetEvent, NetModel, NodeState, Packet, Payload, Refcount,
};
use chronon_models::pcs::{Cell, CellEvent};
use chronon_models::phold::{Job, PholdLp};
use chronon_models::phold_phases::{Hop, MeshObject};
use chronon_models::simplesim::{Message, SimpleLp};
use chronon_models::{DataStore, Manufacturing, Pcs, Phold, PholdPhases, Random, SimpleSim};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Compiles only if `M`'s state and event both serialize.
fn serializable<M: Model>()
where
    M::State: Serialize + DeserializeOwned,
    M::Event: Serialize + DeserializeOwned,
{
}

#[test]
fn every_models_state_and_event_serialize() {
    serializable::<Phold>();
    serializable::<PholdPhases>();
    serializable::<SimpleSim>();
    serializable::<Manufacturing>();
    serializable::<DataStore>();
    serializable::<Pcs>();
    serializable::<NetModel>();
    serializable::<Faulty>();
    serializable::<Random>();
}

/// Writes `v` as JSON, reads it back and checks that what it read writes the same JSON;
/// returns what it read.
fn again<T: Serialize + DeserializeOwned>(v: &T) -> T {
    let json = serde_json::to_string(v).expect("writes JSON");
    let back: T = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(serde_json::to_string(&back).expect("writes JSON"), json);
    back
}

fn slice<T: chronon::shm::ShmSafe + Copy>(v: &[T]) -> BPtr<Slice<T>> {
    with_thread_heap(|h| h.alloc_slice(v)).unwrap().unwrap()
}

#[test]
fn phold_states_and_events_round_trip() {
    let lp = PholdLp {
        events: 17,
        data: vec![0, 1, 255, 7],
    };
    assert_eq!(again(&lp), lp);
    assert_eq!(again(&Job), Job);
    let obj = MeshObject {
        events: [3, 0, 9],
        non_neighbour: 0,
    };
    assert_eq!(again(&obj), obj);
    assert_eq!(again(&Hop { from: 44 }), Hop { from: 44 });
}

#[test]
fn default_states_round_trip() {
    again(&SimpleLp::default());
    again(&Node::default());
    again(&Cell::default());
    again(&NodeState::default());
}

#[test]
fn statistics_round_trip_empty_or_not() {
    // An empty tally's min and max are infinite.
    assert_eq!(again(&Tally::new()), Tally::new());
    let mut t = Tally::new();
    for x in [0.1, 1.0 / 3.0, 2.5e-7] {
        t.record(x);
    }
    assert_eq!(again(&t), t);
    let mut q = TimeAverage::new(0.0, 1.0);
    q.set(0.3, 0.1 + 0.2);
    assert_eq!(again(&q), q);
    let mut h = Histogram::new(0.0, 1.0, 3);
    [0.1, 0.5, 2.0].iter().for_each(|x| h.record(*x));
    assert_eq!(again(&h), h);
}

#[test]
fn events_with_plain_data_round_trip() {
    for f in [
        Flow::Tick,
        Flow::Part {
            line: 2,
            born: 0.1 + 0.2,
        },
        Flow::Product { born: 1.0 / 3.0 },
        Flow::Leave {
            product: true,
            born: 7.25,
        },
    ] {
        assert_eq!(again(&f), f);
    }
    for e in [
        CellEvent::Tick,
        CellEvent::NewCall,
        CellEvent::Handoff { remaining: 0.7 },
        CellEvent::Fading,
    ] {
        assert_eq!(again(&e), e);
    }
    assert_eq!(again(&7u64), 7);
    again(&());
}

#[test]
fn events_with_shared_heap_payloads_round_trip() {
    let body: Vec<u8> = (0..=255).collect();
    let written = with_thread_heap(|h| h.alloc_bytes_with(256, |b| b.copy_from_slice(&body)))
        .unwrap()
        .unwrap();
    let untouched: BPtr<Bytes> = with_thread_heap(|h| h.alloc_untouched(7000))
        .unwrap()
        .unwrap();
    for m in [
        Message {
            id: u64::MAX,
            data: None,
            checksum: 0,
        },
        Message {
            id: 3 << 32 | 9,
            data: Some(written.clone()),
            checksum: body.iter().map(|&b| u64::from(b)).sum(),
        },
        Message {
            id: 1,
            data: Some(untouched),
            checksum: 0,
        },
    ] {
        let back = again(&m);
        assert_eq!(back, m);
        assert_eq!(
            back.data.as_ref().map(|d| d.is_touched()),
            m.data.as_ref().map(|d| d.is_touched())
        );
    }

    let access = StoreEvent::Access {
        origin: 3,
        batch: 12,
        requests: slice(&[(0u16, 991u64), (4, 0), (0, u64::MAX)]),
    };
    let reply = StoreEvent::Reply {
        batch: 12,
        results: slice(&[(0u16, true), (4, false)]),
    };
    for e in [StoreEvent::Tick, StoreEvent::Batch, access, reply] {
        assert_eq!(again(&e), e);
    }

    let packet = |data| {
        NetEvent::Packet(Packet {
            src: 1,
            dst: 6,
            bytes: 256,
            created: 0.1 + 0.2,
            hops: 2,
            link: 1,
            data,
        })
    };
    let payload = BPtr::new(Payload {
        seq: 300,
        body: written,
        multicast: true,
    })
    .unwrap();
    again(&NetEvent::Tick { app: 2 });
    again(&packet(None));
    let NetEvent::Packet(back) = again(&packet(Some(Body::Heap(payload)))) else {
        panic!("a packet comes back a packet");
    };
    let data = back.data.expect("the payload comes back");
    assert_eq!(data.scheme(), Refcount::Heap);
    assert_eq!(data.view(), (300, &body[..], true));
    // A body in this process's memory comes back by value, as a new item of its scheme.
    for scheme in Refcount::ALL.into_iter().skip(1) {
        let local = LocalPayload {
            seq: 7,
            bytes: vec![7u8; 40].into_boxed_slice(),
            multicast: false,
        };
        let sent = Body::local(scheme, local).expect("a process-local scheme");
        let event = packet(Some(sent.clone()));
        // JSON, and bincode: what checkpoints and MPI write (not self-describing).
        let wire = bincode::serialize(&event).expect("bincode writes it");
        let from_bincode: NetEvent = bincode::deserialize(&wire).expect("bincode reads it");
        for back in [again(&event), from_bincode] {
            let NetEvent::Packet(back) = back else {
                panic!("a packet comes back a packet");
            };
            let data = back.data.expect("the payload comes back");
            assert_eq!(data.scheme(), scheme);
            assert_eq!(data.view(), (7, &[7u8; 40][..], false));
            assert!(!Body::ptr_eq(&data, &sent), "{scheme:?}: a new item");
        }
    }
    assert!(Body::local(
        Refcount::Heap,
        LocalPayload {
            seq: 0,
            bytes: Box::new([]),
            multicast: false,
        }
    )
    .is_none());
}
