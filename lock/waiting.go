package lock

// The rules of waiting that hold for every kind. Each kind adds notes of its own beside its code:
// the line of lua and fenced (rules L1–L6, line.go), reentrant's nominations (N1–N3,
// nomination.go), the fair queue (F1–F7, fair.go), what a Redisson client sees (R1–R2,
// reentrant.go) and sharded pub/sub (S1–S2, pubsub_sharded.go). The decisions are lock/core's
// (Queue, Line, Life), which `seckill simulate` runs too; the Lua scripts are in script/lua. Each
// rule names the tests that check it (in lock/ unless named; <kind> and <mode> are subtests).
//
//  1. Safety is not here. Who holds a lock is decided only by the kind's atomic script in Redis,
//     which every waiter runs before it holds anything, or by a release script that hands the
//     lock on exactly as an acquire would (L2, F2). A wake-up that is lost, late, duplicated or
//     wrong costs time, never exclusion. Checked by TestConformance/<kind>/1-exclusion,
//     TestHandoffServesOneProcessInArrivalOrder, TestRedlockMutualExclusionUnderContention and
//     TestRFencedLayoutMixedContention.
//  2. Waiting is asked for. A zero Wait is one attempt that queues nowhere. An owner that holds
//     the lock and acquires it again re-enters at once, ahead of the waiters. Checked by
//     TestHandoffWaitEnds/<mode>, TestFairTryOnceLeavesNoQueueEntry,
//     TestHandoffReentryDoesNotQueue and TestFairReentryAndWatchdog.
//  3. One queue per key per Locker (core.Queue, driven by handoff.go). Waiters are served in
//     arrival order, and only the head goes to Redis. A head that won leaves a hint: the lock is
//     held here until its release rings, or a lease from now, so the next head does not try
//     before either, where that ring is sure to come. The fair lock's queue is Redisson's, in
//     Redis (F1). Checked by TestHandoffServesOneProcessInArrivalOrder/<mode>.
//  4. A release wakes one waiter per waiting process, and no ring is lost. A ring wakes only the
//     head. The queue counts rings, so a ring between an attempt and the sleep after it still
//     wakes the head, and one older than the attempt does not. The line kinds wake one waiter in
//     all (L2, N2, F2). Checked by TestReentrantHandoffWakesOneWaiterAtATime and
//     TestHandoffWakesOtherProcesses/<mode>.
//  5. Every sleep is bounded: by the holder's PTTL, by the kind's relook bound where the TTL is
//     unknown (core.NoQuorumPoll for Redlock), and by the wait and the context. A lock whose holder
//     died is therefore taken when it expires. Checked by TestHandoffExpiredLockPassesOn/<mode>,
//     TestConformance/<kind>/11-crashed-holder, 13-no-lost-wake-up and 5-cancel-mid-wait.
//  6. Woken, never polling. One pub/sub connection per Locker (per master for Redlock) serves
//     all its waiters (pubsub.go). A head that has just subscribed looks once more, since a
//     release before the subscription went unheard. A subscription that breaks and comes back
//     rings every head. Nothing talks to Redis under a queue's lock, and an empty queue keeps its
//     subscription for core.Linger. Checked by TestConformance/<kind>/9-wake-without-polling,
//     14-restart, TestReentrantWaiterWokenByUnlockMessage, TestLineOneReleaseWakesOneWaiter and
//     TestShardedResubscription.
//  7. A waiter that leaves takes itself out: out of its queue without holding up the ones behind,
//     and out of any line in Redis, again by the give-back policy (resend) when Redis did not
//     answer, until its entry's deadline. A fair waiter that rides a failover keeps its place in
//     Redisson's queue for its next attempt, and leaves it only if the acquisition ends without
//     the lock. A lock handed to a waiter that has left is passed on by whoever finds out. A waiter
//     that died is dropped from the head of a line in Redis once its deadline has passed
//     (script/lua/drop_dead.lua), so it holds the others up for its own wait at most. Checked by
//     TestLineWaiterThatGivesUpLeavesTheLine, TestFairWaiterThatGivesUpLeavesTheQueue,
//     TestNominationWaiterThatGivesUpLeavesTheLine, TestLineGrantToAWaiterThatLeft,
//     TestLineDeadWaiterHoldsTheLineForItsWait/<mode> and TestFairDeadWaiterHoldsTheLineForItsWait.
//  8. A crashed process costs the others about a second and leaves nothing behind for longer
//     than its waiters' waits (the fenced token counter stays, on purpose). Checked by
//     TestConformance/<kind>/12-crashed-waiters, TestFairQueueOutlivesItsWaitersByLittle and
//     internal/interop's TestLeftoversAfterCrash.
//  9. An attempt that got no answer may still run when Redis thaws, and take a lock for a waiter
//     that has gone (orphan.go). An acquisition that ends without the lock therefore sends the
//     kind's release-if-mine for each such attempt, by the give-back policy, and once more after
//     the first answer. This is done once, in Locker.Acquire, for every kind. One acquisition
//     has one owner, so an attempt made again re-enters what a lost one took. An acquisition
//     that wins gives back any hold such an attempt added to its count (orphans.won). Checked by
//     TestSellsAgainSoonAfterALongFreeze/<kind> and TestConformance/<kind>/23-reply-lost.
//
// The bounds the rules name are lock/core's (timing.go), which the simulator reads too.
