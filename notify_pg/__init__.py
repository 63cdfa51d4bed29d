"""notify_pg: the ports and stores of notify on PostgreSQL (psycopg 3)."""
