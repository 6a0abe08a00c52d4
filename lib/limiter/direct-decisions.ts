/**
 * The limiter's entry for the package's own guards, under a symbol so that it stays off the public
 * API: `limiter[decideDirectly](keys, rules, options, receiver)`. What `consumeAll` does, without
 * what a guard has done once at bootstrap: the rules are its plan's (checked then, shared by every
 * request), the keys come as a list the limiter takes over (prefixed in place), and the decision
 * goes to the receiver, whose answer the returned promise settles with — no keyed rule, key list or
 * continuation per request. The guard uses it only while `consumeAll` is the limiter's own, so a
 * subclass that overrides `consumeAll` still sees every decision.
 */
export const decideDirectly: unique symbol = Symbol('SlidingWindowLimiter.decideDirectly');
