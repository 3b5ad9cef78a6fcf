/** The two stores the Service runs on. */
export type StoreDialect = 'sqlite' | 'postgres';
