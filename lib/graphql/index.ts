// nestjs-sliding-limit/graphql: the guard for @nestjs/graphql resolvers, apart so apps without GraphQL never load it.

export { GqlSlidingLimitGuard } from './gql-sliding-limit.guard';
export {
  SlidingLimitGraphQLError,
  type SlidingLimitGraphQLCode,
  type SlidingLimitGraphQLExtensions,
} from './sliding-limit-graphql.error';
export { gqlArgs } from './graphql-args';
