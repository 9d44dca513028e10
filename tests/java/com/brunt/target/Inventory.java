package com.brunt.target;

/**
 * The shared object behind /contended: one monitor every worker fights over,
 * so thread dumps show BLOCKED workers waiting on a com.brunt.target.Inventory
 * held by a worker sleeping inside reserve().
 */
public final class Inventory {
    public static final Inventory INSTANCE = new Inventory();

    private long reserved;

    /** Holds this object's monitor for ms milliseconds (a slow critical section). */
    public synchronized long reserve(long ms) throws InterruptedException {
        Thread.sleep(ms);
        return ++reserved;
    }
}
