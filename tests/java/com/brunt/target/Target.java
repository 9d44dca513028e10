package com.brunt.target;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.commons.pool2.BasePooledObjectFactory;
import org.apache.commons.pool2.PooledObject;
import org.apache.commons.pool2.impl.DefaultPooledObject;
import org.apache.commons.pool2.impl.GenericObjectPool;

/**
 * brunt's Java test target: an HTTP server on 127.0.0.1 with known contention,
 * a real pool whose borrow parks, a pinning virtual-thread endpoint, a
 * shedding endpoint, a leak and deadlocks by construction.
 *
 * Usage: Target [--port N] [--workers N] [--pool-size N] [--shed-cap N]
 * Prints "LISTENING <port>" once the server accepts connections.
 * Interface is shared by several test suites: keep it stable.
 */
public final class Target {
    /** Retained forever by /leak. */
    static final List<byte[]> LEAK = new ArrayList<>();

    private final GenericObjectPool<PooledConn> pool;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicLong vthreadSeq = new AtomicLong();
    private final int shedCap;

    /** What the pool hands out: stands in for a database connection. */
    public static final class PooledConn {
        final int id;

        PooledConn(int id) {
            this.id = id;
        }

        long query(long ms) throws InterruptedException {
            Thread.sleep(ms);
            return id;
        }
    }

    static final class ConnFactory extends BasePooledObjectFactory<PooledConn> {
        private final AtomicInteger ids = new AtomicInteger();

        @Override
        public PooledConn create() {
            return new PooledConn(ids.incrementAndGet());
        }

        @Override
        public PooledObject<PooledConn> wrap(PooledConn c) {
            return new DefaultPooledObject<>(c);
        }
    }

    Target(int poolSize, int shedCap) {
        GenericObjectPool<PooledConn> p = new GenericObjectPool<>(new ConnFactory());
        p.setMaxTotal(poolSize);
        p.setMaxIdle(poolSize);
        p.setBlockWhenExhausted(true); // borrow parks in LinkedBlockingDeque.takeFirst
        this.pool = p;
        this.shedCap = shedCap;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parseArgs(args);
        int port = Integer.parseInt(opts.getOrDefault("port", "0"));
        int workers = Integer.parseInt(opts.getOrDefault("workers", "16"));
        int poolSize = Integer.parseInt(opts.getOrDefault("pool-size", "2"));
        int shedCap = Integer.parseInt(opts.getOrDefault("shed-cap", "4"));

        Target t = new Target(poolSize, shedCap);
        HttpServer server =
                HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1024);
        ExecutorService exec = Executors.newFixedThreadPool(workers, named("http-worker-"));
        server.setExecutor(exec);
        server.createContext("/fast", ex -> t.handle(ex, t::fast));
        server.createContext("/health", ex -> t.handle(ex, q -> reply(200, "ok")));
        server.createContext("/contended", ex -> t.handle(ex, t::contended));
        server.createContext("/pool", ex -> t.handle(ex, t::pool));
        server.createContext("/vthread", ex -> t.handle(ex, t::vthread));
        server.createContext("/shed", ex -> t.handle(ex, t::shed));
        server.createContext("/leak", ex -> t.handle(ex, t::leak));
        server.createContext("/deadlock", ex -> t.handle(ex, t::deadlock));
        server.createContext("/cpu", ex -> t.handle(ex, t::cpu));
        Leaks.register(server, t);
        server.start();
        System.out.println("LISTENING " + server.getAddress().getPort());
        System.out.flush();
    }

    // ---- endpoints ------------------------------------------------------

    Reply fast(Map<String, String> q) {
        return reply(200, "fast");
    }

    // Burns CPU in application code for `ms`: execution samples are only
    // taken of running Java threads, and the other endpoints mostly wait.
    Reply cpu(Map<String, String> q) {
        long ms = num(q, "ms", 50);
        return reply(200, "spun " + Spin.run(ms));
    }

    Reply contended(Map<String, String> q) throws Exception {
        long ms = num(q, "ms", 50);
        long n = Inventory.INSTANCE.reserve(ms);
        return reply(200, "reserved " + n);
    }

    Reply pool(Map<String, String> q) throws Exception {
        long ms = num(q, "ms", 50);
        PooledConn c = pool.borrowObject();
        try {
            return reply(200, "conn " + c.query(ms));
        } finally {
            pool.returnObject(c);
        }
    }

    Reply vthread(Map<String, String> q) throws Exception {
        long ms = num(q, "ms", 20);
        Thread t = VirtualThreads.start(new VirtualThreads.PinnedWork(ms), vthreadSeq.incrementAndGet());
        t.join();
        return reply(200, VirtualThreads.available() ? "virtual" : "platform");
    }

    Reply shed(Map<String, String> q) throws Exception {
        long ms = num(q, "ms", 20);
        int now = inFlight.incrementAndGet();
        try {
            if (now > shedCap) {
                Reply r = reply(503, "overloaded");
                r.headers.put("Retry-After", "1");
                return r;
            }
            Thread.sleep(ms);
            return reply(200, "admitted");
        } finally {
            inFlight.decrementAndGet();
        }
    }

    Reply leak(Map<String, String> q) {
        int kb = (int) num(q, "kb", 64);
        int size;
        synchronized (LEAK) {
            LEAK.add(new byte[kb * 1024]);
            size = LEAK.size();
        }
        return reply(200, "retained " + size);
    }

    Reply deadlock(Map<String, String> q) {
        String kind = q.getOrDefault("kind", "monitor");
        int n = "lock".equals(kind) ? Deadlocks.reentrant() : Deadlocks.monitors();
        return reply(200, "deadlock " + n);
    }

    // ---- plumbing -------------------------------------------------------

    interface Endpoint {
        Reply call(Map<String, String> query) throws Exception;
    }

    static final class Reply {
        final int status;
        final String body;
        final Map<String, String> headers = new HashMap<>();

        Reply(int status, String body) {
            this.status = status;
            this.body = body;
        }
    }

    static Reply reply(int status, String body) {
        return new Reply(status, body);
    }

    void handle(HttpExchange ex, Endpoint e) throws IOException {
        Reply r;
        try {
            r = e.call(query(ex.getRequestURI()));
        } catch (Exception err) {
            r = reply(500, String.valueOf(err));
        }
        byte[] body = (r.body + "\n").getBytes(StandardCharsets.UTF_8);
        for (Map.Entry<String, String> h : r.headers.entrySet()) {
            ex.getResponseHeaders().set(h.getKey(), h.getValue());
        }
        ex.getResponseHeaders().set("Content-Type", "text/plain");
        ex.sendResponseHeaders(r.status, body.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
        }
    }

    static Map<String, String> query(URI uri) {
        Map<String, String> m = new HashMap<>();
        String raw = uri.getRawQuery();
        if (raw == null) {
            return m;
        }
        for (String kv : raw.split("&")) {
            int eq = kv.indexOf('=');
            if (eq > 0) {
                m.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
        }
        return m;
    }

    static long num(Map<String, String> q, String key, long dflt) {
        try {
            return Long.parseLong(q.getOrDefault(key, Long.toString(dflt)));
        } catch (NumberFormatException e) {
            return dflt;
        }
    }

    static ThreadFactory named(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(false);
            return t;
        };
    }

    static Map<String, String> parseArgs(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value, got " + args[i]);
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        return m;
    }
}
