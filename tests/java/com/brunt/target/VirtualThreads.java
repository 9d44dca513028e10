package com.brunt.target;

import java.lang.reflect.Method;

/**
 * Virtual threads reached by reflection, so the target compiles with
 * --release 17 and still pins on JDK 21: a virtual thread that sleeps inside
 * synchronized cannot unmount from its carrier (JDK 21-23). On JDK 17 the same
 * work runs on a platform thread.
 */
public final class VirtualThreads {
    private static final Object BUILDER_LOCK = new Object();
    private static final Method OF_VIRTUAL;
    private static final Method NAME;
    private static final Method START;

    static {
        Method ofVirtual = null;
        Method name = null;
        Method start = null;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
            Class<?> builder = Class.forName("java.lang.Thread$Builder");
            name = builder.getMethod("name", String.class, long.class);
            start = builder.getMethod("start", Runnable.class);
        } catch (ReflectiveOperationException e) {
            ofVirtual = null; // JDK 17: no virtual threads
        }
        OF_VIRTUAL = ofVirtual;
        NAME = name;
        START = start;
    }

    private VirtualThreads() {}

    public static boolean available() {
        return OF_VIRTUAL != null;
    }

    /** Starts r on a virtual thread named vthread-N (platform thread on JDK 17). */
    public static Thread start(Runnable r, long n) {
        if (OF_VIRTUAL != null) {
            try {
                Object b = OF_VIRTUAL.invoke(null);
                synchronized (BUILDER_LOCK) {
                    b = NAME.invoke(b, "vthread-", n);
                }
                return (Thread) START.invoke(b, r);
            } catch (ReflectiveOperationException e) {
                // fall through to a platform thread
            }
        }
        Thread t = new Thread(r, "vthread-fallback-" + n);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The pinning work: hold a monitor while sleeping. */
    public static final class PinnedWork implements Runnable {
        private final long ms;

        public PinnedWork(long ms) {
            this.ms = ms;
        }

        @Override
        public void run() {
            synchronized (this) {
                sleepInsideMonitor();
            }
        }

        private void sleepInsideMonitor() {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
