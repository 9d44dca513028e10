package com.brunt.target;

import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A service on HikariCP and PostgreSQL whose requests queue for one hot row:
 * GET /hot borrows a pooled connection, SELECT ... FOR UPDATE on orders row 1,
 * holds it --hold-ms (work inside the transaction), UPDATE, COMMIT. With more
 * workers than pooled connections, the workers wait in the pool while the
 * pooled connections wait on the row lock: the cross-tier chain.
 *
 * Args: --port 0 --db-port P --pool-size 4 --workers 16 --hold-ms 25
 * [--marker M]; the password of role `app` in PGPASSWORD (the JDBC driver
 * is on the classpath: Debian's libpostgresql-jdbc-java).
 */
public final class HotRowDb {
    public static void main(String[] args) throws Exception {
        int port = 0, dbPort = 5432, pool = 4, workers = 16;
        long hold = 25;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--port": port = Integer.parseInt(args[i + 1]); break;
                case "--db-port": dbPort = Integer.parseInt(args[i + 1]); break;
                case "--pool-size": pool = Integer.parseInt(args[i + 1]); break;
                case "--workers": workers = Integer.parseInt(args[i + 1]); break;
                case "--hold-ms": hold = Long.parseLong(args[i + 1]); break;
                default: break;
            }
        }
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + dbPort + "/postgres?ApplicationName=hot-java");
        cfg.setUsername("app");
        cfg.setPassword(System.getenv("PGPASSWORD"));
        cfg.setMaximumPoolSize(pool);
        cfg.setMinimumIdle(pool);
        cfg.setConnectionTimeout(5000);
        HikariDataSource ds = new HikariDataSource(cfg);
        final long holdMs = hold;
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 512);
        AtomicInteger n = new AtomicInteger();
        ExecutorService ex = Executors.newFixedThreadPool(workers, r -> {
            Thread t = new Thread(r, "http-worker-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(ex);
        server.createContext("/hot", h -> {
            int code = 200;
            String body = "ok\n";
            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                try (PreparedStatement s = c.prepareStatement("SELECT n FROM orders WHERE id = ? FOR UPDATE")) {
                    s.setInt(1, 1);
                    s.executeQuery().close();
                }
                Thread.sleep(holdMs);
                try (PreparedStatement s = c.prepareStatement("UPDATE orders SET n = n + ? WHERE id = ?")) {
                    s.setInt(1, 1);
                    s.setInt(2, 1);
                    s.executeUpdate();
                }
                c.commit();
            } catch (Exception e) {
                code = 503;
                body = "db error: " + e + "\n";
            }
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            h.sendResponseHeaders(code, b.length);
            try (OutputStream o = h.getResponseBody()) {
                o.write(b);
            }
        });
        server.start();
        System.out.println("LISTENING " + server.getAddress().getPort());
        System.out.flush();
    }
}
