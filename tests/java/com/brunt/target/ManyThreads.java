package com.brunt.target;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * Starts N threads in a mix of states (BLOCKED on shared monitors, sleeping,
 * parked, in Object.wait) so a thread dump has thousands of realistic
 * entries: the parser benchmark's input. Prints "READY <n>" when all run.
 *
 * Usage: ManyThreads N
 */
public final class ManyThreads {
    static final Object[] MONITORS = new Object[16];

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        for (int i = 0; i < MONITORS.length; i++) {
            MONITORS[i] = new Object();
        }
        CountDownLatch started = new CountDownLatch(n);
        // One holder per monitor keeps it forever, so the others stay BLOCKED.
        for (int i = 0; i < MONITORS.length; i++) {
            Object m = MONITORS[i];
            start("holder-" + i, () -> {
                synchronized (m) {
                    started.countDown();
                    sleepForever();
                }
            });
        }
        for (int i = MONITORS.length; i < n; i++) {
            int kind = i % 4;
            Object m = MONITORS[i % MONITORS.length];
            start("worker-" + i, () -> {
                started.countDown();
                switch (kind) {
                    case 0:
                        synchronized (m) {
                            sleepForever();
                        }
                        break;
                    case 1:
                        sleepForever();
                        break;
                    case 2:
                        while (true) {
                            LockSupport.park();
                        }
                    default:
                        Object own = new Object();
                        synchronized (own) {
                            try {
                                own.wait();
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                }
            });
        }
        started.await();
        Thread.sleep(200);
        System.out.println("READY " + n);
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    static void start(String name, Runnable r) {
        Thread t = new Thread(null, r, name, 256 * 1024);
        t.setDaemon(true);
        t.start();
    }

    static void sleepForever() {
        try {
            Thread.sleep(Long.MAX_VALUE);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
