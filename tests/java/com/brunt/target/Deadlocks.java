package com.brunt.target;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Deadlocks by construction for /deadlock: two threads take two locks in
 * opposite order, and a latch makes sure each holds its first lock before
 * asking for the second, so the cycle always forms.
 */
public final class Deadlocks {
    /** Distinct classes so dumps name each monitor plainly. */
    public static final class LeftLock {}
    public static final class RightLock {}

    private static final AtomicInteger SEQ = new AtomicInteger();

    private Deadlocks() {}

    /** Monitor (synchronized) deadlock between threads deadlock-N-a and deadlock-N-b. */
    public static int monitors() {
        int n = SEQ.incrementAndGet();
        LeftLock left = new LeftLock();
        RightLock right = new RightLock();
        CountDownLatch bothHold = new CountDownLatch(2);
        start("deadlock-" + n + "-a", () -> {
            synchronized (left) {
                awaitQuietly(bothHold);
                synchronized (right) {
                    noop();
                }
            }
        });
        start("deadlock-" + n + "-b", () -> {
            synchronized (right) {
                awaitQuietly(bothHold);
                synchronized (left) {
                    noop();
                }
            }
        });
        return n;
    }

    /** ReentrantLock deadlock between threads lockdeadlock-N-a and lockdeadlock-N-b. */
    public static int reentrant() {
        int n = SEQ.incrementAndGet();
        ReentrantLock first = new ReentrantLock();
        ReentrantLock second = new ReentrantLock();
        CountDownLatch bothHold = new CountDownLatch(2);
        start("lockdeadlock-" + n + "-a", () -> {
            first.lock();
            awaitQuietly(bothHold);
            second.lock();
        });
        start("lockdeadlock-" + n + "-b", () -> {
            second.lock();
            awaitQuietly(bothHold);
            first.lock();
        });
        return n;
    }

    private static void start(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true); // a deadlocked pair must not keep the JVM alive
        t.start();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        latch.countDown();
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void noop() {}
}
