package com.brunt.target;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Leaks of known kind and size for brunt's soak tests, one per request
 * (truth by construction: the rate × the size):
 * /grow/entries?kb=N[&n=K] — one (or K) {@link CacheEntry} holding a byte[N KiB], kept;
 * /grow/threads — one thread `export-worker-N` parked forever in {@link Exporter#run};
 * /grow/sockets — one client socket to {@link #PEER}, which closes its end at once,
 *   kept open: CLOSE_WAIT to 127.0.0.1:PEER-port;
 * /grow/direct?kb=N — one direct ByteBuffer of N KiB, kept (native memory, NMT `Other`);
 * /grow/pool?port=P — one connection to 127.0.0.1:P taken from a "pool" and never
 *   returned: ESTABLISHED to 127.0.0.1:P (the peer keeps its end open);
 * /grow/classes?n=K — K classes, each defined in a fresh class loader that is kept
 *   (a class-loader leak: Metaspace and the loaded-class count grow, NMT `Class`);
 * /churn?kb=N — N KiB of garbage, nothing kept (the clean control).
 */
final class Leaks {
    /** What /grow/entries keeps: one per request. */
    static final class CacheEntry {
        final long id;
        final byte[] payload;

        CacheEntry(long id, int bytes) {
            this.id = id;
            this.payload = new byte[bytes];
        }
    }

    /** The body of each leaked thread: parks until the JVM ends. */
    static final class Exporter implements Runnable {
        @Override
        public void run() {
            while (true) {
                LockSupport.park(this);
            }
        }
    }

    static final List<CacheEntry> ENTRIES = new ArrayList<>();
    static final List<Socket> SOCKETS = new ArrayList<>();
    static final List<ByteBuffer> DIRECT = new ArrayList<>();
    static final List<Socket> BORROWED = new ArrayList<>();
    static final List<Class<?>> DEFINED = new ArrayList<>();
    static final AtomicInteger THREADS = new AtomicInteger();
    static volatile Object sink;
    private static ServerSocket peer;

    static void register(HttpServer server, Target t) {
        server.createContext("/grow/entries", ex -> t.handle(ex, Leaks::entries));
        server.createContext("/grow/threads", ex -> t.handle(ex, q -> thread()));
        server.createContext("/grow/sockets", ex -> t.handle(ex, q -> socket()));
        server.createContext("/grow/direct", ex -> t.handle(ex, Leaks::direct));
        server.createContext("/grow/pool", ex -> t.handle(ex, Leaks::borrow));
        server.createContext("/grow/classes", ex -> t.handle(ex, Leaks::classes));
        server.createContext("/churn", ex -> t.handle(ex, Leaks::churn));
    }

    static Target.Reply entries(Map<String, String> q) {
        int kb = (int) Target.num(q, "kb", 10);
        long n = Target.num(q, "n", 1);
        synchronized (ENTRIES) {
            for (long i = 0; i < n; i++) {
                ENTRIES.add(new CacheEntry(ENTRIES.size(), kb * 1024));
            }
            return Target.reply(200, "entries " + ENTRIES.size());
        }
    }

    static Target.Reply thread() {
        Thread t = new Thread(new Exporter(), "export-worker-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        t.start();
        return Target.reply(200, "threads " + THREADS.get());
    }

    /** The peer: accepts and closes at once, so the client end sits in CLOSE_WAIT. */
    static synchronized int peerPort() throws IOException {
        if (peer == null) {
            peer = new ServerSocket(0, 1024, InetAddress.getLoopbackAddress());
            Thread a = new Thread(() -> {
                while (true) {
                    try {
                        peer.accept().close();
                    } catch (IOException e) {
                        return;
                    }
                }
            }, "peer-acceptor");
            a.setDaemon(true);
            a.start();
        }
        return peer.getLocalPort();
    }

    static Target.Reply socket() throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), peerPort()), 5000);
        synchronized (SOCKETS) {
            SOCKETS.add(s);
            return Target.reply(200, "sockets " + SOCKETS.size());
        }
    }

    static Target.Reply direct(Map<String, String> q) {
        int kb = (int) Target.num(q, "kb", 64);
        ByteBuffer b = ByteBuffer.allocateDirect(kb * 1024);
        synchronized (DIRECT) {
            DIRECT.add(b);
            return Target.reply(200, "direct " + DIRECT.size());
        }
    }

    /** A connection borrowed from a pool that is never given back. */
    static Target.Reply borrow(Map<String, String> q) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), (int) Target.num(q, "port", 0)), 5000);
        synchronized (BORROWED) {
            BORROWED.add(s);
            return Target.reply(200, "borrowed " + BORROWED.size());
        }
    }

    /** What each fresh loader defines: a class of its own (same bytes, new loader). */
    static final class Plugin {
        long calls;

        long run(long x) {
            calls++;
            return x * 31 + calls;
        }

        @Override
        public String toString() {
            return "plugin " + calls;
        }
    }

    private static byte[] pluginBytes;

    static synchronized byte[] pluginBytes() throws IOException {
        if (pluginBytes == null) {
            try (java.io.InputStream in = Leaks.class.getResourceAsStream("Leaks$Plugin.class")) {
                pluginBytes = in.readAllBytes();
            }
        }
        return pluginBytes;
    }

    /** A loader per class, as a script engine or a proxy factory per request makes them. */
    static final class OneClassLoader extends ClassLoader {
        OneClassLoader() {
            super(null);
        }

        Class<?> define(byte[] b) {
            return defineClass("com.brunt.target.Leaks$Plugin", b, 0, b.length);
        }
    }

    static Target.Reply classes(Map<String, String> q) throws IOException {
        long n = Target.num(q, "n", 1);
        byte[] b = pluginBytes();
        synchronized (DEFINED) {
            for (long i = 0; i < n; i++) {
                DEFINED.add(new OneClassLoader().define(b));
            }
            return Target.reply(200, "classes " + DEFINED.size());
        }
    }

    static Target.Reply churn(Map<String, String> q) {
        int kb = (int) Target.num(q, "kb", 64);
        sink = new byte[kb * 1024];
        return Target.reply(200, "churned");
    }

    private Leaks() {}
}
