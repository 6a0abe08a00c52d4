import { Inject } from '@nestjs/common';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';

/**
 * Injects the module's {@link SlidingWindowLimiter}, for limits decided in code (count only failed
 * logins: `peek`, `consume` on failure, `reset` on success). Same as typing the parameter as
 * `SlidingWindowLimiter`; useful where the type is erased.
 */
export const InjectSlidingLimiter = (): PropertyDecorator & ParameterDecorator => Inject(SlidingWindowLimiter);
