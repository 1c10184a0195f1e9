import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { ConfirmButton } from './ConfirmButton';

describe('<ConfirmButton>', () => {
  it('asks before acting and passes the reason', async () => {
    const onConfirm = vi.fn(() => Promise.resolve());
    render(<ConfirmButton label="Pause" title="Pause d-1?" reason={{ label: 'Reason' }} onConfirm={onConfirm} testId="pause" />);
    await userEvent.click(screen.getByTestId('pause'));
    const dialog = screen.getByRole('dialog', { name: 'Pause d-1?' });
    expect(dialog).toHaveAttribute('aria-modal', 'true');
    expect(screen.getByLabelText(/Reason/)).toHaveFocus();
    await userEvent.type(screen.getByLabelText(/Reason/), 'load test');
    await userEvent.click(screen.getByTestId('pause-confirm'));
    expect(onConfirm).toHaveBeenCalledWith('load test');
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(screen.getByTestId('pause')).toHaveFocus();
  });

  it('cancels with Escape without acting, focus on Cancel for a destructive action', async () => {
    const onConfirm = vi.fn(() => Promise.resolve());
    render(<ConfirmButton label="Roll back" title="Roll back?" danger onConfirm={onConfirm} testId="rb" />);
    await userEvent.click(screen.getByTestId('rb'));
    expect(screen.getByRole('button', { name: 'Cancel' })).toHaveFocus();
    await userEvent.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(onConfirm).not.toHaveBeenCalled();
  });

  it('keeps the dialog open with the error when the action fails, and requires a required reason', async () => {
    const onConfirm = vi.fn(() => Promise.reject(new Error('deployment d-1 is not running')));
    render(<ConfirmButton label="Reject" title="Reject?" reason={{ label: 'Comment', required: true }} onConfirm={onConfirm} testId="rej" />);
    await userEvent.click(screen.getByTestId('rej'));
    await userEvent.click(screen.getByTestId('rej-confirm'));
    expect(screen.getByRole('alert')).toHaveTextContent('Comment is required.');
    expect(onConfirm).not.toHaveBeenCalled();
    await userEvent.type(screen.getByLabelText(/Comment/), 'no');
    await userEvent.click(screen.getByTestId('rej-confirm'));
    expect(await screen.findByRole('alert')).toHaveTextContent('deployment d-1 is not running');
    expect(screen.getByRole('dialog')).toBeInTheDocument();
  });

  it('keeps Tab inside the dialog', async () => {
    render(<ConfirmButton label="Go" title="Go?" onConfirm={() => Promise.resolve()} testId="go" />);
    await userEvent.click(screen.getByTestId('go'));
    expect(screen.getByTestId('go-confirm')).toHaveFocus();
    await userEvent.tab();
    expect(screen.getByRole('button', { name: 'Cancel' })).toHaveFocus();
    await userEvent.tab({ shift: true });
    expect(screen.getByTestId('go-confirm')).toHaveFocus();
  });
});
