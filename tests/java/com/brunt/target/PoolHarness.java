package com.brunt.target;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * Exhausts one real pool of each kind brunt recognises, so thread dumps show
 * genuine borrow-wait stacks: per kind, a thread "<kind>-holder" takes the
 * only slot and keeps it, and threads "<kind>-waiter-N" wait to borrow
 * (virtual threads with --virtual, JDK 21+, reached by reflection).
 *
 * Usage: PoolHarness [--waiters N] [--virtual] [kind ...]
 * kinds: hikari dbcp2 pool2 c3p0 tomcat httpclient4 httpclient5 (default: all)
 * Prints "FAILED <kind> <error>" for a kind that could not be set up and
 * "READY <kind> ..." once every waiter of the others is parked. A daemon
 * java.util.Timer ("harness-timer") runs an empty task every 100 ms.
 */
public final class PoolHarness {
    static final List<String> ALL =
            Arrays.asList("hikari", "dbcp2", "pool2", "c3p0", "tomcat", "httpclient4", "httpclient5");
    private static final long WAIT_MS = 600_000;

    public static void main(String[] args) throws Exception {
        int waiters = 3;
        boolean virtual = false;
        List<String> kinds = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if ("--waiters".equals(args[i]) && i + 1 < args.length) {
                waiters = Integer.parseInt(args[++i]);
            } else if ("--virtual".equals(args[i])) {
                virtual = true;
            } else {
                kinds.add(args[i]);
            }
        }
        if (kinds.isEmpty()) {
            kinds.addAll(ALL);
        }
        DriverManager.registerDriver(new FakeJdbc.Driver());
        // An idle java.util.Timer, as many services have: its thread waits
        // on the TaskQueue monitor between runs (JFR: jdk.JavaMonitorWait).
        new java.util.Timer("harness-timer", true).schedule(new java.util.TimerTask() {
            @Override
            public void run() {
                // nothing: housekeeping that finds nothing to do
            }
        }, 100, 100);
        int silentPort = silentServer();

        List<String> ready = new ArrayList<>();
        for (String kind : kinds) {
            try {
                Callable<Object> borrow = borrower(kind, silentPort);
                List<Thread> ws = exhaust(kind, borrow, waiters, virtual);
                if (awaitParked(ws, 15_000)) {
                    ready.add(kind);
                } else {
                    System.out.println("FAILED " + kind + " waiters did not park");
                }
            } catch (Throwable e) {
                System.out.println("FAILED " + kind + " " + e);
            }
        }
        System.out.println("READY " + String.join(" ", ready));
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE); // until the test kills us
    }

    /** A callable that borrows one resource from a pool of the given kind, sized 1. */
    static Callable<Object> borrower(String kind, int silentPort) throws Exception {
        switch (kind) {
            case "hikari": {
                com.zaxxer.hikari.HikariConfig cfg = new com.zaxxer.hikari.HikariConfig();
                cfg.setDataSource(new FakeJdbc.DataSource());
                cfg.setMaximumPoolSize(1);
                cfg.setMinimumIdle(1);
                cfg.setConnectionTimeout(WAIT_MS);
                cfg.setPoolName("hikari-harness");
                com.zaxxer.hikari.HikariDataSource ds = new com.zaxxer.hikari.HikariDataSource(cfg);
                return ds::getConnection;
            }
            case "dbcp2": {
                org.apache.commons.dbcp2.BasicDataSource ds = new org.apache.commons.dbcp2.BasicDataSource();
                ds.setDriver(new FakeJdbc.Driver());
                ds.setUrl("jdbc:fake:dbcp2");
                ds.setMaxTotal(1);
                ds.setMaxWaitMillis(WAIT_MS);
                return ds::getConnection;
            }
            case "pool2": {
                org.apache.commons.pool2.impl.GenericObjectPool<Object> p =
                        new org.apache.commons.pool2.impl.GenericObjectPool<>(
                                new org.apache.commons.pool2.BasePooledObjectFactory<Object>() {
                                    @Override
                                    public Object create() {
                                        return new Object();
                                    }

                                    @Override
                                    public org.apache.commons.pool2.PooledObject<Object> wrap(Object o) {
                                        return new org.apache.commons.pool2.impl.DefaultPooledObject<>(o);
                                    }
                                });
                p.setMaxTotal(1);
                return p::borrowObject;
            }
            case "c3p0": {
                com.mchange.v2.c3p0.ComboPooledDataSource ds = new com.mchange.v2.c3p0.ComboPooledDataSource();
                ds.setDriverClass(FakeJdbc.Driver.class.getName());
                ds.setJdbcUrl("jdbc:fake:c3p0");
                ds.setMinPoolSize(1);
                ds.setInitialPoolSize(1);
                ds.setMaxPoolSize(1);
                ds.setAcquireIncrement(1);
                ds.setCheckoutTimeout(0); // wait forever
                return ds::getConnection;
            }
            case "tomcat": {
                org.apache.tomcat.jdbc.pool.PoolProperties p = new org.apache.tomcat.jdbc.pool.PoolProperties();
                p.setDataSource(new FakeJdbc.DataSource());
                p.setMaxActive(1);
                p.setMaxIdle(1);
                p.setMinIdle(0);
                p.setInitialSize(0);
                p.setMaxWait((int) WAIT_MS);
                p.setFairQueue(true);
                org.apache.tomcat.jdbc.pool.DataSource ds = new org.apache.tomcat.jdbc.pool.DataSource(p);
                return ds::getConnection;
            }
            case "httpclient4": {
                org.apache.http.impl.conn.PoolingHttpClientConnectionManager cm =
                        new org.apache.http.impl.conn.PoolingHttpClientConnectionManager();
                cm.setMaxTotal(1);
                cm.setDefaultMaxPerRoute(1);
                org.apache.http.impl.client.CloseableHttpClient c =
                        org.apache.http.impl.client.HttpClients.custom().setConnectionManager(cm).build();
                String url = "http://127.0.0.1:" + silentPort + "/hc4";
                return () -> c.execute(new org.apache.http.client.methods.HttpGet(url));
            }
            case "httpclient5": {
                org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager cm =
                        new org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager();
                cm.setMaxTotal(1);
                cm.setDefaultMaxPerRoute(1);
                org.apache.hc.client5.http.config.RequestConfig rc = org.apache.hc.client5.http.config.RequestConfig.custom()
                        .setConnectionRequestTimeout(org.apache.hc.core5.util.Timeout.ofMilliseconds(WAIT_MS))
                        .setResponseTimeout(org.apache.hc.core5.util.Timeout.ofMilliseconds(WAIT_MS))
                        .build();
                org.apache.hc.client5.http.impl.classic.CloseableHttpClient c =
                        org.apache.hc.client5.http.impl.classic.HttpClients.custom()
                                .setConnectionManager(cm)
                                .setDefaultRequestConfig(rc)
                                .build();
                String url = "http://127.0.0.1:" + silentPort + "/hc5";
                return () -> c.execute(new org.apache.hc.client5.http.classic.methods.HttpGet(url));
            }
            default:
                throw new IllegalArgumentException("unknown pool kind " + kind + "; known: " + ALL);
        }
    }

    /** Holder takes the only slot and keeps it; then the waiters start. */
    static List<Thread> exhaust(String kind, Callable<Object> borrow, int waiters, boolean virtual)
            throws Exception {
        Object[] held = new Object[1];
        Throwable[] failed = new Throwable[1];
        Thread holder = new Thread(() -> {
            try {
                held[0] = borrow.call();
                FakeJdbc.KEEP.add(held[0]);
                Thread.sleep(Long.MAX_VALUE);
            } catch (Throwable e) {
                failed[0] = e;
            }
        }, kind + "-holder");
        holder.setDaemon(true);
        holder.start();
        // An HTTP client's holder never returns (the server is silent): give it time to lease.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (held[0] == null && failed[0] == null && System.nanoTime() < deadline) {
            if (kind.startsWith("httpclient") && holder.getState() == Thread.State.RUNNABLE) {
                Thread.sleep(300);
                break;
            }
            Thread.sleep(20);
        }
        if (failed[0] != null) {
            throw new IllegalStateException("holder failed", failed[0]);
        }
        List<Thread> ws = new ArrayList<>();
        for (int i = 1; i <= waiters; i++) {
            Runnable r = () -> {
                try {
                    FakeJdbc.KEEP.add(borrow.call());
                } catch (Throwable e) {
                    // a waiter that times out just ends
                }
            };
            String name = kind + "-waiter-" + i;
            Thread w = virtual ? virtualThread(name, r) : new Thread(r, name);
            if (!virtual) {
                w.setDaemon(true);
            }
            w.start();
            ws.add(w);
        }
        return ws;
    }

    /** Thread.ofVirtual().name(name).unstarted(r), by reflection (compiled for release 17). */
    static Thread virtualThread(String name, Runnable r) throws Exception {
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Class<?> b = Class.forName("java.lang.Thread$Builder");
        builder = b.getMethod("name", String.class).invoke(builder, name);
        return (Thread) b.getMethod("unstarted", Runnable.class).invoke(builder, r);
    }

    static boolean awaitParked(List<Thread> ws, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (System.nanoTime() < deadline) {
            boolean all = true;
            for (Thread w : ws) {
                Thread.State s = w.getState();
                all &= s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
            }
            if (all) {
                return true;
            }
            Thread.sleep(20);
        }
        return false;
    }

    /** Accepts connections and never answers: HTTP clients hold their lease forever. */
    static int silentServer() throws IOException {
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(() -> {
            List<Socket> keep = new ArrayList<>();
            while (true) {
                try {
                    keep.add(ss.accept());
                } catch (IOException e) {
                    return;
                }
            }
        }, "silent-server");
        t.setDaemon(true);
        t.start();
        return ss.getLocalPort();
    }
}
