//! SimpleSim (seed 000, §4.1): random message passing with a bounded event list and a payload
//! of configurable size.
//!
//! Each LP starts with one event at a uniform time in `[0, start_window)`. Handling an event, an
//! LP does with the message's payload what `touch` says, then sends one message to a uniformly random LP (itself included) and, while its *queue* holds
//! fewer than `queue_bound` messages, a second one. Every message arrives `lookahead +
//! U(delay_min, delay_max)` later and carries `payload_bytes` bytes and a unique id.
//!
//! **The payload** is, as in the seed, memory the model does not look at: by default
//! ([`Touch::None`]) the sender allocates `payload_bytes` in its worker's shared heap
//! (`Ctx::alloc_untouched`) and neither end reads or writes them; the message carries a
//! `BPtr` to them, so it crosses threads and processes without a copy (`--payload copy` makes
//! the transport copy them),
//! so a comparison of transports measures the cost of moving (or copying) the payload and not
//! the model's own per-byte work. [`Touch::Read`]: the sender allocates zeroed bytes and the
//! receiver sums every byte. [`Touch::Write`]: the sender writes a pattern into every byte and
//! the receiver sums them and checks the sum the sender wrote.
//!
//! **What "queue" means here.** In the seed each LP looks at the size of its own event list,
//! which grows because of messages *other* LPs send to it; an LP of a parallel engine cannot see
//! that list. We take the messages this LP has sent that have not yet arrived: the LP keeps
//! their arrival times (a min-heap in its state) and drops those at or before `now` on every
//! event. Because destinations are uniform, this sender-side count has the same mean as the
//! receiver-side list the seed bounds, and it bounds the total number of pending events by about
//! `lps × queue_bound` just as the seed's rule does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use chronon::shm::{BPtr, Bytes};
use chronon::{Ctx, LpId, Model, ModelStats, SizeHint};

/// SimpleSim's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimpleSim {
    /// Number of LPs.
    pub lps: u32,
    /// Queue size below which an event sends a second message.
    pub queue_bound: u32,
    /// Constant added to every message delay (and the model's lookahead with `delay_min`).
    pub lookahead: f64,
    /// Smallest random part of a message delay.
    pub delay_min: f64,
    /// Largest random part of a message delay.
    pub delay_max: f64,
    /// Bytes of payload every message carries.
    pub payload_bytes: usize,
    /// The start events fall uniformly in `[0, start_window)`.
    pub start_window: f64,
    /// Events before this time are left out of `steady_events`.
    pub warmup: f64,
    /// What the model does with each payload byte.
    pub touch: Touch,
}

/// What SimpleSim does with each payload byte (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum Touch {
    /// The payload is allocated and never read or written (the seed's untouched memory).
    #[default]
    None,
    /// Allocated zeroed; the receiver reads every byte.
    Read,
    /// The sender writes every byte; the receiver reads them and checks their sum.
    Write,
}

impl std::str::FromStr for Touch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Touch::None),
            "read" => Ok(Touch::Read),
            "write" => Ok(Touch::Write),
            _ => Err(format!("unknown touch '{s}' (allowed: none, read, write)")),
        }
    }
}

impl TryFrom<String> for Touch {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl Default for SimpleSim {
    /// The seed's configuration: 8 LPs, bound 5000, lookahead 5, 7000-byte messages.
    fn default() -> Self {
        SimpleSim {
            lps: 8,
            queue_bound: 5000,
            lookahead: 5.0,
            delay_min: 1.0,
            delay_max: 5.0,
            payload_bytes: 7000,
            start_window: 5.0,
            warmup: 0.0,
            touch: Touch::None,
        }
    }
}

impl SimpleSim {
    /// The number of LPs.
    pub fn lps(&self) -> u32 {
        self.lps
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        crate::check::at_least("lps", u64::from(self.lps), 1)?;
        crate::check::nonneg("lookahead", self.lookahead)?;
        crate::check::nonneg("delay-min", self.delay_min)?;
        crate::check::nonneg("delay-max", self.delay_max)?;
        if self.delay_max < self.delay_min {
            return Err(format!(
                "delay-max {} is below delay-min {}; it must be >= delay-min",
                self.delay_max, self.delay_min
            ));
        }
        if self.lookahead + self.delay_min <= 0.0 {
            return Err("lookahead + delay-min is 0; it must be > 0 so time advances".into());
        }
        crate::check::positive("start-window", self.start_window)?;
        crate::check::nonneg("warmup", self.warmup)?;
        if self.payload_bytes > 1 << 30 {
            return Err(format!(
                "payload-bytes is {}; it must be at most 2^30",
                self.payload_bytes
            ));
        }
        Ok(())
    }

    /// The mean delay of a message.
    pub fn mean_delay(&self) -> f64 {
        self.lookahead + 0.5 * (self.delay_min + self.delay_max)
    }

    /// A payload of `payload_bytes` in this worker's shared heap and its byte sum, as `touch`
    /// says: `None` reserves the bytes without touching them.
    fn payload(&self, id: u64, ctx: &mut Ctx<'_, Self>) -> (BPtr<Bytes>, u64) {
        match self.touch {
            Touch::None => (ctx.alloc_untouched(self.payload_bytes), 0),
            Touch::Read => (ctx.alloc_bytes_with(self.payload_bytes, |_| {}), 0),
            Touch::Write => {
                let mut sum = 0u64;
                let data = ctx.alloc_bytes_with(self.payload_bytes, |data| {
                    for (i, b) in data.iter_mut().enumerate() {
                        *b = (id as u8).wrapping_add((i as u8).wrapping_mul(31));
                        sum += u64::from(*b);
                    }
                });
                (data, sum)
            }
        }
    }
}

/// A SimpleSim message: 24 bytes whatever the payload's size, which travels as a `BPtr` into
/// the sender's shared heap (zero copy, also between processes).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// Unique id: sender in the high 32 bits, the sender's message number in the low ones.
    pub id: u64,
    /// The payload: `payload_bytes` bytes in a shared heap (untouched with [`Touch::None`]);
    /// `None` for the start event.
    pub data: Option<BPtr<Bytes>>,
    /// The sum of the payload's bytes, written by the sender.
    pub checksum: u64,
}

chronon::impl_shm_safe!(Message { id, data, checksum });

/// One SimpleSim LP.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SimpleLp {
    /// Arrival times (as ordered bits) of messages sent and not yet arrived, at the last look.
    outstanding: BinaryHeap<Reverse<u64>>,
    /// Messages sent.
    pub sent: u64,
    /// Messages received (the start event not included).
    pub received: u64,
    /// Events handled at or after `warmup`.
    pub steady_events: u64,
    /// Payload bytes read.
    pub bytes_read: u64,
    /// Payload bytes received (allocated by the sender, read or not).
    pub bytes_carried: u64,
    /// Messages whose payload did not match its checksum (always 0).
    pub bad_payloads: u64,
}

impl SimpleLp {
    /// The number of messages this LP has sent that had not arrived at its last event.
    pub fn queue_len(&self) -> usize {
        self.outstanding.len()
    }
}

impl Model for SimpleSim {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps())
    }

    type State = SimpleLp;
    type Event = Message;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> SimpleLp {
        let t = ctx.rng().uniform_range(0.0, self.start_window);
        let me = ctx.me();
        ctx.send(
            me,
            t,
            Message {
                id: u64::MAX,
                data: None,
                checksum: 0,
            },
        );
        SimpleLp::default()
    }

    fn on_event(&self, lp: &mut SimpleLp, msg: &Message, ctx: &mut Ctx<'_, Self>) {
        let now = ctx.now();
        if msg.id != u64::MAX {
            lp.received += 1;
            if let Some(data) = &msg.data {
                lp.bytes_carried += data.len() as u64;
                if self.touch != Touch::None {
                    let bytes = data.as_slice();
                    let sum: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
                    lp.bytes_read += bytes.len() as u64;
                    if sum != msg.checksum {
                        lp.bad_payloads += 1;
                    }
                }
            }
        }
        if now >= self.warmup {
            lp.steady_events += 1;
        }
        // Times are non-negative, so their bit patterns order like the times.
        while lp
            .outstanding
            .peek()
            .is_some_and(|t| f64::from_bits(t.0) <= now)
        {
            lp.outstanding.pop();
        }
        let copies = if lp.outstanding.len() + 1 < self.queue_bound as usize {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let n = u64::from(ctx.lps());
            let dst = ctx.rng().below(n) as LpId;
            let delay = self.lookahead + ctx.rng().uniform_range(self.delay_min, self.delay_max);
            let id = (u64::from(ctx.me()) << 32) | (lp.sent & 0xFFFF_FFFF);
            let (data, checksum) = self.payload(id, ctx);
            lp.sent += 1;
            lp.outstanding.push(Reverse((now + delay).to_bits()));
            ctx.send(
                dst,
                delay,
                Message {
                    id,
                    data: Some(data),
                    checksum,
                },
            );
        }
    }

    fn lookahead(&self) -> f64 {
        self.lookahead + self.delay_min
    }

    /// Each LP keeps about `queue_bound` messages of `payload_bytes` in flight (the module's
    /// bound) and their arrival times.
    fn size_hint(&self) -> SizeHint {
        let bound = u64::from(self.queue_bound.max(1));
        SizeHint {
            state_heap_bytes: bound * 8,
            payload_heap_bytes: self.payload_bytes as u64,
            ..SizeHint::pending(bound)
        }
    }

    fn finish(&self, _lp: LpId, lp: &SimpleLp, stats: &mut ModelStats) {
        stats.add("messages_sent", lp.sent as f64);
        stats.add("messages_received", lp.received as f64);
        stats.add("steady_events", lp.steady_events as f64);
        stats.add("bytes_read", lp.bytes_read as f64);
        stats.add("bytes_carried", lp.bytes_carried as f64);
        stats.add("bad_payloads", lp.bad_payloads as f64);
        stats.add("queue_len_at_end", lp.outstanding.len() as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_survives_a_json_round_trip() {
        let mut lp = SimpleLp {
            sent: 6,
            received: 3,
            steady_events: 4,
            bytes_read: 7000,
            bytes_carried: 21000,
            bad_payloads: 0,
            ..SimpleLp::default()
        };
        for t in [7.5, 6.25, 9.0, 6.25, 11.0 / 3.0] {
            lp.outstanding.push(Reverse(f64::to_bits(t)));
        }
        let mut back = crate::json_again(&lp);
        assert_eq!(back.queue_len(), 5);
        while let Some(t) = lp.outstanding.pop() {
            assert_eq!(back.outstanding.pop(), Some(t));
        }
        assert!(back.outstanding.is_empty());
    }
}
