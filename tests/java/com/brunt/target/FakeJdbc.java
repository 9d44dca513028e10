package com.brunt.target;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverPropertyInfo;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Collections;
import java.util.HashMap;
import java.util.Properties;
import java.util.logging.Logger;

/**
 * A JDBC driver and DataSource that hand out do-nothing connections, so the
 * real JDBC pools (HikariCP, DBCP2, c3p0, tomcat-jdbc) can run and be
 * exhausted without a database.
 */
public final class FakeJdbc {
    private FakeJdbc() {}

    /** A proxy of any java.sql interface answering with harmless defaults. */
    static Object fake(Class<?> iface) {
        InvocationHandler h = new Handler();
        return Proxy.newProxyInstance(FakeJdbc.class.getClassLoader(), new Class<?>[] {iface}, h);
    }

    static final class Handler implements InvocationHandler {
        private volatile boolean closed;

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) {
            String name = m.getName();
            switch (name) {
                case "close":
                    closed = true;
                    return null;
                case "isClosed":
                    return closed;
                case "isValid":
                    return !closed;
                case "getAutoCommit":
                    return true;
                case "getTransactionIsolation":
                    return Connection.TRANSACTION_READ_COMMITTED;
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return args != null && args.length == 1 && proxy == args[0];
                case "toString":
                    return "FakeJdbc@" + Integer.toHexString(System.identityHashCode(proxy));
                case "isWrapperFor":
                    return false;
                default:
                    break;
            }
            Class<?> rt = m.getReturnType();
            if (rt == boolean.class) {
                return false;
            } else if (rt == int.class) {
                return 0;
            } else if (rt == long.class) {
                return 0L;
            } else if (rt == java.util.Map.class) {
                return new HashMap<String, Class<?>>();
            } else if (rt.isInterface() && rt.getName().startsWith("java.sql.")) {
                return fake(rt);
            } else if (rt == Properties.class) {
                return new Properties();
            }
            return null;
        }
    }

    /** Accepts jdbc:fake:* URLs. */
    public static final class Driver implements java.sql.Driver {
        @Override
        public Connection connect(String url, Properties info) {
            return acceptsURL(url) ? (Connection) fake(Connection.class) : null;
        }

        @Override
        public boolean acceptsURL(String url) {
            return url != null && url.startsWith("jdbc:fake:");
        }

        @Override
        public DriverPropertyInfo[] getPropertyInfo(String url, Properties info) {
            return new DriverPropertyInfo[0];
        }

        @Override
        public int getMajorVersion() {
            return 1;
        }

        @Override
        public int getMinorVersion() {
            return 0;
        }

        @Override
        public boolean jdbcCompliant() {
            return false;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }
    }

    public static final class DataSource implements javax.sql.DataSource {
        private PrintWriter log;
        private int loginTimeout;

        @Override
        public Connection getConnection() {
            return (Connection) fake(Connection.class);
        }

        @Override
        public Connection getConnection(String user, String password) {
            return getConnection();
        }

        @Override
        public PrintWriter getLogWriter() {
            return log;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
            log = out;
        }

        @Override
        public void setLoginTimeout(int seconds) {
            loginTimeout = seconds;
        }

        @Override
        public int getLoginTimeout() {
            return loginTimeout;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }

    static final java.util.List<Object> KEEP = Collections.synchronizedList(new java.util.ArrayList<>());
}
