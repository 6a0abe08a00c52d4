import { Inject } from '@nestjs/common';
import { SlidingWindowLimiter } from '../limiter/sliding-window.limiter';

/** Injects the module's {@link SlidingWindowLimiter}, for limits decided in code; useful where the type is erased. */
export const InjectSlidingLimiter = (): PropertyDecorator & ParameterDecorator => Inject(SlidingWindowLimiter);
