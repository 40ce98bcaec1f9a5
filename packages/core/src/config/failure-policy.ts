/** What a check answers when its store cannot: 'open' (allow), 'closed' (deny), 'local' (this process decides). */
export type FailurePolicy = 'open' | 'closed' | 'local';
