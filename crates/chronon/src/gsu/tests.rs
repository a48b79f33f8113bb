use super::{Gsu, Published, Snapshot};
use crate::comm::Mailbox;
use crate::event::EventKey;

fn key(time: f64, src: u32) -> EventKey {
    EventKey { time, src, seq: 0 }
}

fn publish_time(t: f64) -> Published {
    Published {
        moe: key(t, 0),
        bound: t,
        flags: 0,
        aux: f64::INFINITY,
    }
}

#[test]
fn messages_count_until_received_and_lbts_covers_them() {
    let gsu = Gsu::new(2);
    let mail: Vec<Mailbox<EventKey>> = vec![Mailbox::new(), Mailbox::new()];
    gsu.publish(0, &publish_time(5.0));
    gsu.publish(1, &publish_time(7.0));
    gsu.send(1, &mail[1], vec![key(3.0, 0), key(4.0, 0)]);
    let mut s = Snapshot::default();
    gsu.snapshot(|w| mail[w].min_time(), &mut s);
    assert_eq!(s.lbts(), 3.0);
    assert_eq!(s.in_transit(), 2);
    let mut got = Vec::new();
    let n = gsu.receive(
        1,
        &mail[1],
        &mut got,
        |g, e| g.push(e),
        |_| publish_time(3.0),
    );
    assert_eq!(n, 2);
    gsu.snapshot(|w| mail[w].min_time(), &mut s);
    assert_eq!(s.in_transit(), 0);
    assert_eq!(s.lbts(), 3.0);
    assert_eq!(s.min_moe(), key(3.0, 0));
    gsu.publish(
        0,
        &Published {
            flags: 4,
            ..publish_time(9.0)
        },
    );
    gsu.snapshot(|w| mail[w].min_time(), &mut s);
    assert_eq!(s.flags(), 4);
    assert_eq!(s.min_bound(&[1.0, 1.0]), 3.0);
}
