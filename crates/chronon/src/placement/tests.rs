use super::machine::parse_list;
use super::*;

fn machine(allowed: &[usize], nodes: &[Vec<usize>], smt: impl Fn(usize) -> usize) -> Machine {
    Machine::from_parts(allowed, nodes, smt, "test".into())
}

#[test]
fn cpu_lists_parse_like_the_kernel_writes_them() {
    assert_eq!(parse_list("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
    assert_eq!(parse_list(""), Some(vec![]));
    assert_eq!(parse_list("x"), None);
}

#[test]
fn order_is_node_by_node_and_cores_before_their_second_threads() {
    // Two nodes of 2 cores x 2 threads: node 0 = {0, 1, 4, 5}, node 1 = {2, 3, 6, 7}; CPUs 4-7
    // are the second threads of cores 0-3.
    let nodes = vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]];
    let m = machine(&[0, 1, 2, 3, 4, 5, 6, 7], &nodes, |c| usize::from(c >= 4));
    assert_eq!(m.order, [0, 1, 4, 5, 2, 3, 6, 7]);
    assert_eq!((m.cores, m.numa_nodes), (8, 2));
    // A cpuset inside node 1 sees one node.
    let m = machine(&[2, 6], &nodes, |c| usize::from(c >= 4));
    assert_eq!((m.order.as_slice(), m.numa_nodes), (&[2, 6][..], 1));
}

#[test]
fn auto_pins_workers_that_fit_and_on_shares_cores() {
    let m = || machine(&[0, 1], &[vec![0, 1]], |_| 0);
    let fit = Pinner::with_machine(Pin::Auto, 2, m()).placement();
    // One NUMA node: pinned, nothing to first-touch for.
    assert!(fit.pinned && !fit.first_touch, "{fit:?}");
    assert!(
        fit.why.contains("no first touch: one NUMA node"),
        "{}",
        fit.why
    );
    let two = machine(&[0, 1], &[vec![0], vec![1]], |_| 0);
    let p = Pinner::with_machine(Pin::Auto, 2, two).placement();
    assert!(p.pinned && p.first_touch, "{p:?}");
    assert_eq!(fit.cores, [0, 1]);
    let over = Pinner::with_machine(Pin::Auto, 3, m()).placement();
    assert!(!over.pinned && !over.first_touch && over.cores.is_empty());
    assert!(over.why.contains("3 workers on 2 cores"), "{}", over.why);
    let on = Pinner::with_machine(Pin::On, 3, m()).placement();
    assert!(on.pinned && on.first_touch, "{on:?}");
    assert_eq!(on.cores, [0, 1, 0]);
    let off = Pinner::with_machine(Pin::Off, 1, m()).placement();
    assert!(!off.pinned && off.why.contains("--pin off"));
    assert_eq!("on".parse::<Pin>(), Ok(Pin::On));
    assert!("yes".parse::<Pin>().unwrap_err().contains("auto, on, off"));
}

#[test]
fn a_pinned_thread_runs_on_its_core_and_touching_keeps_every_element() {
    let m = Machine::detect();
    assert!(m.cores >= 1 || !affinity::SUPPORTED);
    let p = Pinner::new(Pin::On, 1);
    std::thread::scope(|s| {
        s.spawn(|| {
            p.pin(0);
            if affinity::SUPPORTED {
                assert_eq!(affinity::allowed_cpus(), p.plan.cores);
            }
            let v = p.touch((0..1000).collect::<Vec<u32>>(), touch_vec);
            assert!(v.iter().copied().eq(0..1000));
        });
    });
    let placed = p.placement();
    assert_eq!(placed.pinned, affinity::SUPPORTED, "{placed:?}");
}
