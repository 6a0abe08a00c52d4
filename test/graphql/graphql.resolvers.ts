import { Args, Field, Int, Mutation, ObjectType, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { SkipRateLimit, SlidingLimit } from 'nestjs-sliding-limit';
import { gqlArgs } from 'nestjs-sliding-limit/graphql';

// Resolvers of the GraphQL e2e specs, code first. Every limited field keys on the x-client header
// (falling back to the IP), so one test can stand for several clients.

@ObjectType()
export class Author {
  @Field()
  name!: string;
}

@ObjectType()
export class Post {
  @Field(() => Int)
  id!: number;

  @Field()
  title!: string;
}

@Resolver(() => Post)
export class PostResolver {
  /** Runs once per post: the limit shows what one decision per operation and field means. */
  authorCalls = 0;

  @Query(() => String)
  @SlidingLimit({ name: 'quote', limit: 2, windowMs: 60_000, key: 'header:x-client' })
  quote(): string {
    return 'carpe diem';
  }

  /** Priced by its `first` argument: a page of 6 costs 6 of the 10 per window. */
  @Query(() => [Post])
  @SlidingLimit({
    name: 'posts',
    limit: 10,
    windowMs: 60_000,
    key: 'header:x-client',
    cost: (_request, context) => gqlArgs<{ first: number }>(context).first,
  })
  posts(@Args('first', { type: () => Int }) first: number): Post[] {
    return Array.from({ length: Math.max(0, Math.min(first, 10)) }, (_, i) => ({ id: i, title: `post ${i}` }));
  }

  @ResolveField(() => Author, { nullable: true })
  @SlidingLimit({ name: 'author', limit: 2, windowMs: 60_000, key: 'header:x-client' })
  author(@Parent() post: Post): Author {
    this.authorCalls++;
    return { name: `author of ${post.title}` };
  }

  /** Stacked: two codes per phone number and three per client, decided together. */
  @Mutation(() => Boolean)
  @SlidingLimit({
    name: 'sms-phone',
    limit: 2,
    windowMs: 60_000,
    key: (_request, context) => gqlArgs<{ phone: string }>(context).phone,
  })
  @SlidingLimit({ name: 'sms-client', limit: 3, windowMs: 60_000, key: 'header:x-client' })
  sendCode(@Args('phone') phone: string): boolean {
    return phone.length > 0;
  }
}

/** A class-wide limit, and a query that skips it. */
@Resolver()
@SlidingLimit({ name: 'misc', limit: 1, windowMs: 60_000, key: 'header:x-client' })
export class MiscResolver {
  @Query(() => Int)
  limitedByClass(): number {
    return 1;
  }

  @Query(() => Int)
  @SkipRateLimit()
  free(): number {
    return 2;
  }
}

/**
 * Keyed and priced by the user an auth middleware set (`FakeAuthModule`): a call costs as many units as
 * the user id has characters, and cannot be priced (BAD_REQUEST) without a user.
 */
@Resolver()
export class UserResolver {
  @Query(() => String)
  @SlidingLimit({
    name: 'me',
    limit: 10,
    windowMs: 60_000,
    key: (req) => (req.user as { id?: string } | undefined)?.id,
    cost: (req) => (req.user as { id: string }).id.length,
  })
  me(): string {
    return 'me';
  }
}
