package lock

import "github.com/seckill-lab/seckill/lock/core"

// The rules of waiting, stated once for every kind: who a release wakes, how a waiter sleeps
// without polling, how a dead or departed waiter is passed over, and what a Redisson client on
// the same lock sees. core/queue.go (the decisions of the in-process queue of every kind but
// fair, driven by handoff.go and run by seckill simulate), pubsub.go and pubsub_sharded.go (the wake-up), line.go (the hand-over from the line in Redis, of lua and
// fenced), nomination.go (reentrant's place in the same line) and fair.go (Redisson's queue) are
// there to keep them; the Lua scripts they run are in script/lua (the line itself in
// line.lua). Each rule says the kinds it applies to (lua, fenced, reentrant, fair, multilock,
// redlock; "fenced-rfenced" is NewFenced with WithRFencedLockLayout, built as reentrant without
// the line, like each part of a multilock) and the tests
// that check it (in lock/, unless named internal/interop; <kind> and <mode> are the subtests'
// names).
//
// # What decides who holds
//
//  1. Safety is not here. Who holds a lock is decided only by the kind's own atomic acquire in
//     Redis (for lua and fenced also by a release that hands the lock on, rule 14; for fair by a
//     release that takes it for the first waiter exactly as its acquire would, rule 28), which
//     every waiter runs before it holds anything. A wake-up, grant or nomination that is lost,
//     late, duplicated or wrong costs time, never exclusion. All kinds.
//     Checked by TestConformance/<kind>/1-exclusion, TestHandoffServesOneProcessInArrivalOrder
//     (never two at once), TestRedlockMutualExclusionUnderContention and
//     TestRFencedLayoutMixedContention.
//  2. Waiting is asked for. A zero Wait is one attempt that queues nowhere (no queue, line or
//     waiter entry); an owner that holds a lock and acquires it again re-enters at once, without
//     queueing behind the waiters for it (reentrant, fenced-rfenced, multilock, fair).
//     Checked by TestHandoffWaitEnds/<mode> (Wait 0), TestFairTryOnceLeavesNoQueueEntry and
//     TestHandoffReentryDoesNotQueue (reentrant); fair's re-entry only with nobody waiting, by
//     TestFairReentryAndWatchdog.
//
// # The in-process queue (core/queue.go, driven by handoff.go)
//
//  3. One queue per key per Locker (process), the same FIFO for every kind but fair:
//     waiters join at the tail and are served in arrival order; only the head contends in Redis,
//     the others sleep until the head has got the lock or given up, and the next is rung when
//     the head leaves. A later waiter never overtakes an earlier one in the same process.
//     core/queue.go decides it for every kind but fair; line.go adds to it, for lua and fenced, what a
//     hand-over from the Redis line needs (rule 13).
//     Checked by TestHandoffServesOneProcessInArrivalOrder/<mode> (lua, reentrant, fenced,
//     multilock, redlock).
//  4. A release wakes one waiter per process: it rings the queue (the release's PUBLISH on the
//     key's channel, heard by this process's subscriber, or, for kinds that ring their own
//     releases, redlock, the release itself), and a ring wakes only the head. reentrant,
//     fenced-rfenced, multilock, redlock (lua and fenced wake one waiter in all: rule 14).
//     Checked by TestReentrantHandoffWakesOneWaiterAtATime and TestHandoffWakesOtherProcesses/<mode>.
//  5. No ring is lost: the queue counts rings, and the head compares the count with the one it
//     saw before its last attempt (a ring between the attempt and the sleep is not missed, and a
//     ring older than the attempt does not wake it for nothing). All kinds but fair. Checked by
//     TestReentrantHandoffWakesOneWaiterAtATime (no lost wake-up).
//  6. Every sleep is bounded by a fallback: the holder's PTTL (the lock is free by then anyway),
//     a short random poll where the TTL is unknown (redlock), and always the waiter's own wait
//     and ctx. So every kind keeps its expiry semantics: a lock whose holder vanished is taken
//     when it expires, as with polling (in the line of lua and fenced the first live waiter
//     looks again when the PTTL it read runs out and takes it, the others find it taken; in the
//     fair queue the first waiter looks again at its estimated turn, rule 29). All kinds.
//     Checked by TestHandoffExpiredLockPassesOn/<mode>, TestConformance/<kind>/11-crashed-holder,
//     TestConformance/<kind>/11-crashed-holder and 13-no-lost-wake-up (taken within the kind's
//     relook bound of the expiry), TestHandoffWaitEnds/<mode> and
//     TestConformance/<kind>/5-cancel-mid-wait.
//  7. A head that won leaves a hint for the next: the lock is held in this process until at most
//     now + lease, and its release will ring, so the next head need not try before that ring or
//     that time. The hint is used only where the ring is sure to come (the kind rings its own
//     releases, or the subscription is confirmed); a reentrant release that takes its process
//     out of the line rings its own queue, so a waiter that comes after it does not
//     sleep on the hint for a nomination it is not in line for. lua and fenced also record the
//     holder of each key in this process (line.go's holders), which outlives an empty queue, and
//     the head does not try while it holds. All kinds but fair.
//     Checked by TestHandoffServesOneProcessInArrivalOrder/<mode> (the waiters send nothing while
//     they wait); the ring of a release out of line is not checked by a test.
//  8. An empty queue keeps its subscription for a while (linger) so a crowd that thins out for a
//     moment does not resubscribe on every sale; talking to Redis (subscribe, unsubscribe) is
//     never done under the queue's lock, so a slow or dead Redis blocks no other key.
//     reentrant, fenced-rfenced, multilock, redlock (lua's and fenced's subscription is their
//     process's grant channel, kept for the Locker's life). Not checked by a test.
//
// # Waking without polling (pubsub.go, pubsub_sharded.go)
//
//  9. A release wakes a waiter, which does not poll: a waiter gets a released lock within
//     milliseconds, woken by the release (an in-process hand-over or a message), and while the
//     lock is held a waiting Locker sends only its bounded looks (rules 17 and 26). One pub/sub
//     connection per Locker (per master for redlock, per node for sharded pub/sub), shared by
//     all its waiters, as Redisson keeps one per client, and one type that keeps it for every
//     kind (pubsub.go's subscriber). All kinds.
//     Checked by TestConformance/<kind>/9-wake-without-polling,
//     TestReentrantWaiterWokenByUnlockMessage and TestLineOneReleaseWakesOneWaiter.
//  10. Subscribe, then look once more. A release between a failed attempt and the subscription
//     would not be heard, so a head that has just subscribed tries once more before it sleeps
//     (the fair lock's waiter looks once its subscription is confirmed). lua and fenced go further:
//     a waiter is queued in Redis (so a release may hand it the lock) only once its process's
//     grant subscription is confirmed, and until then its head tries without queueing every
//     unsubscribedPoll. redlock's head is subscribed once one master confirms (a master that is
//     down must not hold it up), so every release is announced on every master, and the head
//     counts one ring per release, not one per master. All kinds. Checked by
//     TestNominationOneReleaseOneAttempt (it counts the look after subscribing); not checked by a
//     test of its own for the other kinds.
//  11. A subscription that breaks and comes back rings every head of the Locker (releases, and
//     grants, published meanwhile went unheard, and a restarted Redis has lost its lines too), so
//     they look again at once rather than at their next timer (a pattern's listeners: fair's
//     waiters of the key). All kinds, over classic and sharded pub/sub.
//     Checked by TestConformance/<kind>/14-restart and TestShardedResubscription.
//  12. Sharded pub/sub (WithShardedPubSub, or a Redis 7 cluster): a channel is subscribed with
//     SSUBSCRIBE on the node that serves its slot; when the slot moves, the channel is subscribed
//     again on its new owner and its listeners are rung once that is confirmed. The grant channel
//     of lua and fenced is classic pub/sub on every topology. reentrant, fenced-rfenced, fair.
//     Checked by TestShardedPubSubOnOneServer, internal/interop's
//     TestClusterSubscriptionFollowsTheSlot and TestClusterWaiterWakesOnForeignSPUBLISH, and
//     script's TestShardedBuildsDifferOnlyInPublish.
//
// # The line in Redis and the cohort (core/line.go, driven by line.go; lua, fenced)
//
//  13. Two lines. In each process the waiters of a key wait in arrival order and only the head
//     goes to Redis (rule 3); in Redis the heads of the processes wait in one line per key (a list
//     of their values, with each one's deadline and the TTL a lock handed to it gets), in the
//     order they first failed to take the lock. lua, fenced; reentrant's processes wait in the
//     same line, with the same keys and scripts (script/lua/line.lua), rule 24.
//     Checked by TestLineOneReleaseWakesOneWaiter/<mode> (served in the order they queued).
//  14. A release hands the lock to the first live waiter in the Redis line: it writes that
//     waiter's value into the lock (fenced: and draws its token) and publishes on that waiter's
//     process's grant channel alone (or, when that waiter is in the releasing process, tells it
//     directly). The releasing process's next waiter joins the Redis line behind in the same
//     script, without a round trip of its own; with nobody in the Redis line, the lock goes to
//     that next waiter; with nobody at all it is deleted. Nobody else wakes, but a waiter that
//     became its process's head while the release ran is told by the release. lua, fenced.
//     Checked by TestLineOneReleaseWakesOneWaiter/<mode>, TestLineHandsOverWithinOneProcess/<mode>
//     and TestLineWaiterArrivingDuringARelease/<mode>.
//  15. The cohort: a release may instead hand the lock to its process's next waiter while the
//     Redis line waits, at most cohort holders of one process in a row, since a hand-over inside
//     one process sends no message to another. The Redis line's first waiter is then passed over
//     at most cohort-1 times by each process ahead of it, never for longer. lua, fenced.
//     Checked by TestLineSharesTurnsAcrossProcesses/cohort-<k>.
//  16. A lock handed to a waiter lives min(its lease, its wait, maxGrantTTL) at first; a live
//     holder pushes that out to its lease a third of the way in, unless it has released by then
//     (fair: a lock handed over with the Locker's default lease gets the lease the waiter asked
//     for). A watched lease's push is its watchdog's first round, so a push that fails closes
//     Lost within the grant TTL, by the renewal policy (watchdog.go); an explicit lease's is one
//     command, and its Lost follows the grant TTL until that succeeds. lua, fenced, fair (the
//     waiters of this library in its grant hash, rule 28).
//     Checked by TestLineHandedOverLockGetsItsLease/<mode>, TestLineHandedOverWatchedLeaseLost
//     and TestFairHandoverKeepsTheWaitersLease.
//  17. A head queued in Redis looks again at least every lostGrantBound, and the waiters behind
//     never sleep longer than the lock's PTTL or the first waiter's grant TTL without looking
//     again: a grant lost with a broken subscription costs that much, never the rest of the wait.
//     lua, fenced (reentrant: rule 26). Checked by TestConformance/<kind>/9-wake-without-polling,
//     which bounds the looks from above; that a lost grant costs no more is not checked by a test.
//
// # Dead and departed waiters (script/lua/drop_dead.lua)
//
//  18. A waiter whose wait has ended is gone: both lines kept in Redis (the line of lua, fenced
//     and reentrant, and the fair queue) drop the waiters at their head whose deadline has
//     passed, by the one rule of drop_dead.lua, before a release hands the lock on or an acquire
//     looks at its turn. lua, fenced, reentrant, fair.
//     Checked by TestLineDeadWaiterHoldsTheLineForItsWait/<mode>,
//     TestNominationDeadNomineeHoldsTheLineForItsWait, TestFairDeadWaiterHoldsTheLineForItsWait
//     and internal/interop's TestMixedFairLineKilledWaiter.
//  19. A waiter that dies holds the others up for at most its own wait, and a handed-over lock
//     for less: a lock handed to a dead waiter lives its grant TTL (rule 16) and then passes on
//     (rule 6); a dead nominee costs the others lostGrantBound at most (rule 26). lua, fenced,
//     reentrant, fair. Checked by the tests of rule 18.
//  20. A waiter that leaves without the lock (its wait or ctx ended) takes itself out: out of its
//     process's queue without holding up the ones behind; out of the Redis line with the release
//     script (tried again when a broken connection kept it from Redis, since an entry left
//     behind would hold the line up until its deadline); out of the fair queue, the ones behind
//     moving up (Redisson's acquireFailed); and a process whose last waiter gives up leaves the
//     line. All kinds. Checked by TestHandoffWaitEnds/<mode>,
//     TestLineWaiterThatGivesUpLeavesTheLine, TestFairWaiterThatGivesUpLeavesTheQueue,
//     TestNominationWaiterThatGivesUpLeavesTheLine and TestConformance/<kind>/5-cancel-mid-wait.
//  21. A lock handed to a waiter that has left is passed on by whoever finds out: the leaving
//     waiter itself (the release script passes on a lock handed to it meanwhile), or the process
//     that hears the grant (lua, fenced), or that finds the waiter gone (fair: released for it,
//     on to the next waiter). A nominee whose waiters have all left passes the nomination on to
//     the next in line when it hears it, also when its waiter took the lock on its own first
//     (reentrant). lua, fenced, reentrant, fair. Checked by TestLineGrantToAWaiterThatLeft and
//     TestFairHandoverRacingTheWaitersOwnAttempt; the nominee's pass is counted by
//     TestNominationUnlockMessageOnlyWhereRedissonListens (its unlock message more).
//  22. A process that crashes with waiters queued costs the others about a second. In the fair
//     queue each process with waiters says it is alive every aliveEvery, for aliveFor; the
//     heartbeat of any live process drops the waiters of one that stopped saying so from the
//     head at once (not one thread wait after another) and rings its own first waiter. The
//     other kinds hold it by rules 17, 19 and 26; multilock's and redlock's waiters queue only in
//     their own process (rule 3), so a dead process's hold nobody up. All kinds.
//     Checked by TestConformance/<kind>/12-crashed-waiters and 11-crashed-holder (with a dead
//     holder, which also bounds the time from the lock's expiry to its next holder by the kind's
//     relook bound).
//  23. What a crash leaves in Redis expires: the keys of the Redis lines live until their last
//     waiter's deadline (the fair queue's, without a thread wait, a quarter of the wait longer,
//     at most a second), so a crash of everyone leaves nothing behind for longer (the fenced
//     token counter stays, on purpose). lua, fenced, reentrant, fair.
//     Checked by TestFairQueueOutlivesItsWaitersByLittle and internal/interop's
//     TestLeftoversAfterCrash.
//
// # The reentrant lock in the line (nomination.go; reentrant)
//
//  24. The line of rule 13, beside Redisson's keys in the lock's hash slot; its members are the
//     processes (Lockers) with a waiter for the lock, each with its deadline (its last waiter's).
//     A process is in it once: only its head tries (rule 3). A head whose attempt fails queues its
//     process in the same script (keeping its place); a release by a process with more waiters
//     keeps it in line for them, in the same script. What a release does for the first in line
//     is where reentrant differs from lua and fenced (rules 14, 25): it does not hand Redisson's
//     hash over, because a Java client's release deletes the hash without reading the line, and
//     a Java waiter, in no line of ours, takes the lock only when it finds it free. reentrant (not
//     fenced-rfenced, not multilock's parts). Checked by TestNominationOneReleaseOneAttempt.
//  25. A release that deletes the lock tells the first process in line whose deadline has not
//     passed, on that process's own nomination channel, and only that process's head tries: one
//     message per release, however many processes wait. reentrant.
//     Checked by TestNominationOneReleaseOneAttempt and
//     TestNominationUnlockMessageOnlyWhereRedissonListens.
//  26. A process in line whose head is not told looks again at least every lostGrantBound, so a
//     nominee that died, or a message lost with a broken connection, costs the others that much
//     at most. A process with no waiter left when it releases is not in line; its next waiter,
//     should one come, tries at once rather than wait for a nomination. reentrant.
//     Checked by TestNominationDeadNomineeHoldsTheLineForItsWait and
//     TestReentrantWaiterWokenByUnlockMessage.
//
// # The fair queue (fair.go; fair)
//
//  27. Redisson's queue decides the order across every process: every waiter queues in Redis at
//     once (there is no in-process queue, rule 3), and the first to queue is the first served,
//     whichever instance it came through. Checked by TestFairServesInQueueOrderAcrossProcesses
//     and internal/interop's TestMixedFairLineEqualWaits.
//  28. A release wakes the first waiter alone, on its own channel, after dropping the dead at the
//     head (rule 18). When that waiter waits in the releasing process, the script takes the lock
//     for it as its own acquire would and it is told in the process; a waiter of another process
//     that is this library's (in the grant hash) gets the lock the same way, with its grant TTL
//     (rule 16), told by the grant message; anyone else is told with the unlock message and takes
//     the lock itself. Checked by TestFairHandsOverWithinOneProcess,
//     TestFairHandoverRacingTheWaitersOwnAttempt and TestFairDeadWaiterHoldsTheLineForItsWait.
//  29. A waiter sleeps until it is told, or until its estimated turn (then it looks again: the
//     waiter before it may be dead), bounded below so a stale estimate is no busy loop, and above
//     by the thread wait: its deadline does not count the hold of whoever took the lock ahead
//     of it, so a long hold can make a script drop it, live as it is, and looking again within
//     a thread wait puts it back in line. Checked by internal/interop's
//     TestMixedFairLineUnequalWaits.
//  30. A process listens to one pattern per key (classic pub/sub), which hears each of its
//     waiters by its own channel, and a message on it is handled once, for the one waiter it
//     names; with sharded pub/sub each waiter subscribes its own channel, as Redisson's.
//     Checked by TestPatternMessageHandledOnce.
//  31. The deadlines are Redisson's: the queue's deadlines are chained by the thread wait
//     (WithThreadWait) or each acquisition's wait, and the move-ups Redisson writes on every
//     acquisition are deferred (fair_lag.lua), but a waiter's deadline, its score less what it
//     still owes, is what Redisson's scripts would have written, and the scores are never
//     earlier. Checked by TestFairDeferredMoveUpsMatchRedisson, TestFairWithThreadWaitMatchesRedisson
//     and TestFairThreadWaitChainsDeadlines.
//
// # What a Redisson client sees and does
//
//  32. The lock is Redisson's: nothing of this library's waiting writes the lock hash, and every
//     release deletes it and publishes Redisson's unlock message wherever a Redisson waiter may
//     listen, so a Java Redisson client on the same lock sees a Redisson peer: fenced-rfenced and
//     multilock always; reentrant whenever a client listens on the unlock channel itself, as
//     Redisson's waiters do. This library's processes listen to it by pattern (PUBSUB NUMSUB
//     leaves them out), so among them alone the nomination (rule 25) goes out without it.
//     reentrant, fenced-rfenced, multilock (fair: rule 35). Checked by
//     TestNominationUnlockMessageOnlyWhereRedissonListens, TestReentrantRedissonLayout and
//     TestReentrantExcludesWithJavaRedisson.
//  33. A Redisson client's waiters wake on every release and race whoever tries; an unlock
//     message (a Redisson client's release, which names nobody, or one that a Redisson waiter
//     hears too) rings every process's queue, and every head then tries, as in Redisson.
//     fenced-rfenced and multilock are in no line: each release is the unlock message
//     and every process's head tries (within a process the waiters still take turns, rule 3).
//     reentrant, fenced-rfenced, multilock. Checked by TestNominationRedissonReleaseWakesEveryone,
//     TestReentrantExcludesWithJavaRedisson and TestRFencedLayoutWakesTheOtherSide.
//  34. With sharded pub/sub, which has no patterns, the unlock message always goes out (with
//     SPUBLISH, in the lock's slot, where Redisson listens) and is listened to as a channel, so
//     there the herd stays. reentrant, fenced-rfenced, fair. Checked by
//     TestShardedPubSubOnOneServer, TestRFencedLayoutWakesTheOtherSide/sharded=true and
//     internal/interop's TestClusterUnlockIsSharded and TestClusterWaiterWakesOnForeignSPUBLISH.
//  35. A Redisson client in the fair queue waits in the same queue, in the same order, as this
//     library's waiters; it is never in the grant hash, so it is always told with the unlock
//     message on its own channel and takes the lock itself, as Redisson's release expects. fair.
//     Checked by TestFairRedissonLayout, TestFairWithThreadWaitMatchesRedisson and
//     internal/interop's TestMixedFairLineEqualWaits, TestMixedFairLineUnequalWaits and
//     TestMixedFairLineKilledWaiter.
//  36. The line of lua and fenced is this library's own: the lock is a string its scripts write,
//     so no Redisson client takes part in it (a Java RFencedLock on the same name gets
//     WRONGTYPE while the lock is held here; fenced-rfenced is the layout to share). lua, fenced.
//     Not checked by a test.
//
// # An attempt without an answer (orphan.go)
//
//  37. An attempt that got no answer may still run: a client that ends a blocked call when its
//     context ends (ContextTimeoutEnabled) closes the connection and loses the answer, not the
//     command, which a frozen Redis runs at its thaw, taking a free lock (or a place in a line)
//     for a waiter that has gone. An acquisition that ends without the lock therefore sends, in
//     the background, the kind's release-if-mine for each of its attempts that got no answer
//     (the value's or the owner's release script, which never frees another's lock; fair also
//     leaves the queue; redlock deletes its value on every master), again every releaseRetry
//     while Redis does not answer, for a lease at most, and once more after the first answer,
//     so the order in which the thaw runs the two does not matter. Once, in Locker.Acquire, for
//     every kind; an unanswered re-entry of an owner that holds the lock is not given back. All
//     kinds. Checked by TestSellsAgainSoonAfterALongFreeze/<kind>.
//
// The bounds the rules name, from lock/core (the simulator reads them there too).
const (
	lostGrantBound = core.LostGrantBound
	maxGrantTTL    = core.MaxGrantTTL
	cohort         = core.Cohort
)
