//! Preemption by interrupt (seed 003 §2.2–2.3): a tick that finds its thread in *application
//! mode* — model code of a running context, outside every engine call and every allocation —
//! sends it, on its way out of the signal handler, to a trampoline that saves every register
//! and runs the context's check-and-switch from ordinary code, as if the model had called a
//! preemption point at the interrupted instruction. README.md ("Ticks that preempt") has the
//! protocol, the argument and its limits.
//!
//! Here: the thread's mode (which context is armed, how deep in platform mode the thread is),
//! [`PlatformAlloc`] (the allocator wrapper that marks allocation as platform mode), the signal
//! handler's redirection and the trampoline (x86-64 Linux only; elsewhere, and in programs that
//! do not install [`PlatformAlloc`], ticks stay cooperative).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{compiler_fence, AtomicBool, Ordering::Relaxed, Ordering::SeqCst};

/// The running context's check, as the trampoline reaches it.
pub(crate) trait InterruptCheck {
    /// A tick interrupted the context in application mode: check BH_min and switch off the
    /// CPU if an earlier message waits (this is ordinary code on the context's stack).
    fn interrupted(&self);
}

/// The check of the context whose handler runs in application mode on this thread (`None`
/// outside contexts), and the lowest address the trampoline may use on its stack.
type Armed = Option<(NonNull<dyn InterruptCheck + 'static>, usize)>;

thread_local! {
    // All three are const-initialized and have no destructor: the signal handler reads them
    // with plain TLS loads (async-signal-safe: no lazy initialization, no allocation).
    static ARMED: Cell<Armed> = const { Cell::new(None) };
    /// Nesting depth of platform mode (engine calls, allocations, the trampoline itself).
    static PLATFORM: Cell<u32> = const { Cell::new(0) };
    /// Where the interrupted code resumes: written by the handler, read by the trampoline.
    static RESUME_AT: Cell<usize> = const { Cell::new(0) };
}

/// Whether a [`PlatformAlloc`] has served an allocation in this process.
static ALLOC_MARKS: AtomicBool = AtomicBool::new(false);

/// The global allocator wrapper that makes every allocation platform mode, so that a tick
/// never switches a context off the CPU while it holds the allocator's locks. A program
/// installs it with `#[global_allocator] static A: chronon::PlatformAlloc = chronon::PlatformAlloc;` (the `chronon` binary and every program on the runner's
/// `main` do); without it, ticks under `--preempt` stay cooperative (a check at the model's
/// next engine call), and the report's `preempt_interrupts` says 0.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlatformAlloc;

// Safety: every method forwards to `System` with the same arguments; the platform-mode guard
// only touches a thread-local counter and allocates nothing.
unsafe impl GlobalAlloc for PlatformAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _p = Platform::enter();
        mark_alloc();
        // Safety: the caller's contract for `alloc`, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let _p = Platform::enter();
        mark_alloc();
        // Safety: the caller's contract for `alloc_zeroed`, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _p = Platform::enter();
        // Safety: the caller's contract for `dealloc`, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _p = Platform::enter();
        // Safety: the caller's contract for `realloc`, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[inline(always)]
fn mark_alloc() {
    // Ordering: Relaxed — a flag read only to decide whether interrupts may be used; the
    // allocation that sets it happens before any run starts on the thread that reads it.
    if !ALLOC_MARKS.load(Relaxed) {
        ALLOC_MARKS.store(true, Relaxed);
    }
}

/// Platform mode for as long as it lives: a tick that comes meanwhile switches nothing.
/// Restores the depth it found (not a decrement), so a context dropped while it held one, or
/// unwound through it, leaves the thread's mode as the platform context expects.
pub(crate) struct Platform {
    was: u32,
}

impl Platform {
    #[inline(always)]
    pub(crate) fn enter() -> Platform {
        let was = PLATFORM.with(Cell::get);
        PLATFORM.with(|p| p.set(was + 1));
        // Ordering: the signal handler runs on this thread; the fence keeps the compiler from
        // moving the platform code below above the store that marks it.
        compiler_fence(SeqCst);
        Platform { was }
    }
}

impl Drop for Platform {
    #[inline(always)]
    fn drop(&mut self) {
        // Ordering: as in `enter`, the platform code above stays before the store.
        compiler_fence(SeqCst);
        PLATFORM.with(|p| p.set(self.was));
    }
}

/// Writes the armed check. The handler reads `ARMED` only while `PLATFORM` is 0, so every
/// write happens in platform mode: a tick can never see half of a (two-word) pointer.
fn set_armed(a: Armed) {
    let _p = Platform::enter();
    ARMED.with(|c| c.set(a));
}

/// Whether the engine call now ending returns to application mode: the call's own platform
/// mode is the only one on the thread. A call nested in platform mode (a handler inside
/// [`platform_mode`], a Python handler) returns to platform code, which is never switched off
/// the CPU (seed 003's `try_leave_platform_mode` checks only on the way out to the model).
#[inline(always)]
pub(crate) fn returns_to_application() -> bool {
    PLATFORM.with(Cell::get) <= 1
}

/// Runs `f` in platform mode: a tick switches nothing while it runs. For model code that must
/// not be interrupted by a switch: code that holds a lock of its own, prints, or borrows a
/// `RefCell` shared with other events (preempt/README.md, "What a preemptible handler must not
/// do").
pub fn platform_mode<R>(f: impl FnOnce() -> R) -> R {
    let _p = Platform::enter();
    f()
}

/// The handler of a context in application mode: while it lives, a tick may send the thread to
/// the trampoline, which calls `check`. Disarmed when dropped.
pub(crate) struct Arm {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Arm {
    /// Arms `check` for the running context, whose stack's lowest usable address is
    /// `stack_limit`. The caller keeps `check` alive until the `Arm` is dropped or the context
    /// is suspended (a suspension takes the armed check off the thread: [`leave`]).
    pub(crate) fn new(check: &dyn InterruptCheck, stack_limit: usize) -> Arm {
        let p: NonNull<dyn InterruptCheck + '_> = NonNull::from(check);
        // Safety: only the lifetime is erased. The pointer is on the thread only while the
        // context runs with `check` alive: `Drop` clears it, a suspension takes it off (`leave`)
        // and puts it back on resume (`restore`), and a context dropped while suspended never
        // puts it back.
        let p: NonNull<dyn InterruptCheck + 'static> = unsafe { std::mem::transmute(p) };
        set_armed(Some((p, stack_limit)));
        Arm {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for Arm {
    fn drop(&mut self) {
        set_armed(None);
    }
}

/// A suspended context's mode, kept on its stack while the platform context runs.
#[derive(Clone, Copy)]
pub(crate) struct Mode {
    armed: Armed,
    platform: u32,
}

/// Before a context switches off the CPU: its mode, and the platform context's (nothing
/// armed, depth 0) put on the thread.
/// Called in platform mode (an engine call, or the trampoline's check), so no tick acts while
/// `ARMED` changes; the depth is cleared last.
#[inline]
pub(crate) fn leave() -> Mode {
    debug_assert!(
        PLATFORM.with(Cell::get) > 0,
        "a switch happens in platform mode"
    );
    let armed = ARMED.with(|a| a.replace(None));
    // Ordering: `ARMED` is cleared before the depth drops to 0 (the handler runs on this
    // thread and reads the depth first).
    compiler_fence(SeqCst);
    let platform = PLATFORM.with(|p| p.replace(0));
    Mode { armed, platform }
}

/// After a context is resumed: its mode back on the thread. The depth (at least 1: a context
/// switches off only in platform mode) goes back first, so no tick acts while `ARMED` changes.
#[inline]
pub(crate) fn restore(m: Mode) {
    PLATFORM.with(|p| p.set(m.platform));
    // Ordering: as in `leave`, the depth is non-zero before `ARMED` changes.
    compiler_fence(SeqCst);
    ARMED.with(|a| a.set(m.armed));
}

/// Whether a worker of this process ran with ticks that preempt by interrupt.
static USED: AtomicBool = AtomicBool::new(false);

/// Notes that a worker of this process runs with ticks that preempt by interrupt.
pub(crate) fn mark_used() {
    // Ordering: Relaxed — read after the run, once every worker thread was joined.
    USED.store(true, Relaxed);
}

/// Whether a worker of this process ran with ticks that preempt by interrupt: a context such a
/// tick switched off may have been dropped without unwinding, leaking what its handler held.
pub(crate) fn used() -> bool {
    // Ordering: Relaxed, as in `mark_used`.
    USED.load(Relaxed)
}

/// Whether ticks can preempt by interrupt in this process: x86-64 Linux, a CPU and kernel with
/// XSAVE, and [`PlatformAlloc`] installed.
pub(crate) fn available() -> bool {
    // Ordering: Relaxed, as in `mark_alloc`.
    ALLOC_MARKS.load(Relaxed) && machine::supported()
}

/// Whether the thread is in application mode: a context's handler runs, outside every engine
/// call and allocation, and no panic is unwinding.
#[inline(always)]
fn in_application_mode() -> Option<usize> {
    if PLATFORM.with(Cell::get) != 0 {
        return None;
    }
    // Ordering: the depth is read before `ARMED`, which only changes while the depth is not 0
    // (`set_armed`, `leave`, `restore`).
    compiler_fence(SeqCst);
    let (_, limit) = ARMED.with(Cell::get)?;
    if std::thread::panicking() {
        return None;
    }
    Some(limit)
}

/// Called by the trampoline (ordinary code, on the interrupted context's stack, every register
/// of the interrupted code saved): hands back where that code resumes, then runs the check.
extern "C" fn on_trampoline(resume_at: *mut usize) {
    // Safety: the trampoline passes the address of the return slot it reserved on its frame.
    unsafe { resume_at.write(RESUME_AT.with(Cell::get)) };
    // The handler left the thread in platform mode (depth 1): no tick redirects again until
    // the check is over.
    if let Some((check, _)) = ARMED.with(Cell::get) {
        // Safety: armed means the context that armed it is the one running (see `Arm::new`),
        // and this is its stack.
        unsafe { check.as_ref() }.interrupted();
    }
    PLATFORM.with(|p| p.set(0));
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod machine {
    use std::cell::Cell;

    /// Stack the trampoline reserves for the saved extended state (x87, SSE, AVX, AVX-512 and
    /// any other component the OS enabled); the CPU's need is checked against it.
    const XSAVE_BYTES: u32 = 16384;
    /// The trampoline needs this much stack below the interrupted code's stack pointer: the
    /// red zone, the saved registers, the XSAVE area and the check's frames. A tick that finds
    /// less left above the guard page switches nothing.
    const STACK_NEEDED: usize = 64 << 10;

    pub(super) fn supported() -> bool {
        static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *OK.get_or_init(|| {
            if !std::arch::is_x86_feature_detected!("xsave") {
                return false;
            }
            // CPUID leaf 0xD exists when XSAVE is supported (checked above); EBX is the size
            // of the XSAVE area for the features the OS enabled in XCR0.
            let need = std::arch::x86_64::__cpuid_count(0xD, 0).ebx;
            need > 0 && need <= XSAVE_BYTES && os_enabled_xsave()
        })
    }

    /// Whether the OS set CR4.OSXSAVE (CPUID.1:ECX bit 27), without which XSAVE faults.
    fn os_enabled_xsave() -> bool {
        // CPUID leaf 1 exists on every x86-64 CPU.
        let ecx = std::arch::x86_64::__cpuid(1).ecx;
        ecx & (1 << 27) != 0
    }

    std::arch::global_asm!(
        ".pushsection .text.chronon_preempt_trampoline,\"ax\",@progbits",
        ".p2align 4",
        ".globl chronon_preempt_trampoline",
        ".hidden chronon_preempt_trampoline",
        "chronon_preempt_trampoline:",
        // A slot for the return address, without touching the flags.
        "lea rsp, [rsp - 8]",
        "pushfq",
        "push rax",
        "push rcx",
        "push rdx",
        "push rbx",
        "push rbp",
        "push rsi",
        "push rdi",
        "push r8",
        "push r9",
        "push r10",
        "push r11",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "cld",
        "mov rbx, rsp",
        "and rsp, -64",
        "sub rsp, {xsave_bytes}",
        // XRSTOR of the standard form wants the header's reserved bytes zero; XSAVE writes
        // only XSTATE_BV there.
        "xor eax, eax",
        "mov [rsp + 512], rax",
        "mov [rsp + 520], rax",
        "mov [rsp + 528], rax",
        "mov [rsp + 536], rax",
        "mov [rsp + 544], rax",
        "mov [rsp + 552], rax",
        "mov [rsp + 560], rax",
        "mov [rsp + 568], rax",
        "mov eax, -1",
        "mov edx, -1",
        "xsave64 [rsp]",
        // The return slot: 15 registers and the flags above the saved stack pointer.
        "lea rdi, [rbx + 128]",
        "call {on_trampoline}",
        "mov eax, -1",
        "mov edx, -1",
        "xrstor64 [rsp]",
        "mov rsp, rbx",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop r11",
        "pop r10",
        "pop r9",
        "pop r8",
        "pop rdi",
        "pop rsi",
        "pop rbp",
        "pop rbx",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "popfq",
        // Back to the interrupted instruction, and over the red zone the handler skipped.
        "ret 128",
        ".popsection",
        xsave_bytes = const XSAVE_BYTES,
        on_trampoline = sym super::on_trampoline,
    );

    unsafe extern "C" {
        fn chronon_preempt_trampoline();
    }

    /// From the tick's signal handler: if the thread is in application mode with room on its
    /// stack, make the handler return into the trampoline instead of the interrupted code.
    ///
    /// # Safety
    /// `uc` is the `ucontext_t` the kernel passed to a `SA_SIGINFO` handler on this thread.
    pub(super) unsafe fn redirect(uc: *mut libc::c_void, resume_at: &Cell<usize>) -> bool {
        let Some(limit) = super::in_application_mode() else {
            return false;
        };
        // Safety: the caller's contract: a live ucontext of this signal.
        let g = unsafe { &mut (*(uc as *mut libc::ucontext_t)).uc_mcontext.gregs };
        let sp = g[libc::REG_RSP as usize] as usize;
        if sp.saturating_sub(limit) < STACK_NEEDED {
            return false;
        }
        resume_at.set(g[libc::REG_RIP as usize] as usize);
        super::PLATFORM.with(|p| p.set(1));
        // The interrupted code's red zone (128 bytes below its stack pointer) stays untouched;
        // the trampoline's `ret 128` steps back over it.
        g[libc::REG_RSP as usize] = (sp - 128) as i64;
        g[libc::REG_RIP as usize] = chronon_preempt_trampoline as *const () as usize as i64;
        true
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod machine {
    pub(super) fn supported() -> bool {
        false
    }
}

/// The tick's signal handler's part: redirect to the trampoline when the thread is in
/// application mode (a context armed for interrupts runs its handler). Returns whether it did.
///
/// # Safety
/// `uc` is the `ucontext_t` the kernel passed to a `SA_SIGINFO` handler on this thread.
#[inline]
pub(crate) unsafe fn on_tick(uc: *mut libc::c_void) -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        RESUME_AT.with(|r| {
            // Safety: the caller's contract.
            unsafe { machine::redirect(uc, r) }
        })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = uc;
        false
    }
}
